# version_header.cmake — run at every build (cmake -P), not only at configure time, so the
# git commit stamped into every results record is the commit the binary was built from.
# A tree with uncommitted changes to tracked files gets "-dirty": such a build's numbers cannot
# be reproduced from the commit alone. configure_file leaves OUT untouched when nothing
# changed, so an unchanged commit recompiles nothing.
# In: SOURCE_DIR, IN (version.h.in), OUT, PROJECT_VERSION.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE ECOCOMPUTE_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0 OR NOT ECOCOMPUTE_GIT_COMMIT)
  set(ECOCOMPUTE_GIT_COMMIT "unknown")
else()
  execute_process(COMMAND git diff --quiet HEAD -- WORKING_DIRECTORY ${SOURCE_DIR}
                  RESULT_VARIABLE dirty ERROR_QUIET)
  if(dirty EQUAL 1)
    string(APPEND ECOCOMPUTE_GIT_COMMIT "-dirty")
  endif()
endif()
configure_file(${IN} ${OUT} @ONLY)

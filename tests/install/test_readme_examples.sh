#!/usr/bin/env bash
# test_readme_examples.sh — every `ecocompute ...` line of the README's sh blocks runs as written
# from the repository root of a fresh clone, in order (later lines use what earlier ones wrote),
# against the built binary. Marked lines: `[gpu]` need an NVIDIA GPU and are skipped; `[server]`
# runs until stopped, so it passes when it is still serving after 3 s; `[exit 1]` reports
# problems by design, so 1 is its success. Anything else must exit 0.
set -u
bin=${EC_BINARY:?}
src=${EC_SOURCE_DIR:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A fresh clone's root: the repository's folders and files, linked; what the examples write lands
# here. The program as `ecocompute` on PATH; the results database and HOME fresh.
root=$tmp/root
mkdir -p "$root" "$tmp/bin" "$tmp/home"
for f in "$src"/* "$src"/.[!.]*; do
  case $(basename "$f") in build*|.git|.devpack|.devlibs|.devshare|.devbin*) continue ;; esac
  ln -s "$f" "$root/"
done
ln -s "$bin" "$tmp/bin/ecocompute"
export PATH="$tmp/bin:$PATH" HOME=$tmp/home XDG_DATA_HOME=$tmp/home/.local/share

# The examples: lines starting with `ecocompute ` inside ```sh fences, continuation lines joined.
python3 - "$src/README.md" >"$tmp/examples" <<'PY'
import sys
lines, out, fence, cont = open(sys.argv[1]).read().split("\n"), [], False, None
for line in lines:
    if line.startswith("```"):
        fence = line.strip() == "```sh" if not fence else False
        continue
    if not fence:
        continue
    if cont is not None:
        cont += " " + line.strip()
    elif line.startswith("ecocompute "):
        cont = line
    else:
        continue
    if cont.endswith("\\"):
        cont = cont[:-1].rstrip()
        continue
    out.append(cont)
    cont = None
print("\n".join(out))
PY
fail=0 ran=0 skipped=0
while IFS= read -r line; do
  case $line in *"[gpu]"*) skipped=$((skipped + 1)); continue ;; esac
  ok=0
  case $line in
    *"[server]"*) (cd "$root" && timeout 3 bash -c "$line") >"$tmp/out" 2>"$tmp/err"; rc=$?; ok=124 ;;
    *"[exit 1]"*) (cd "$root" && timeout 300 bash -c "$line") >"$tmp/out" 2>"$tmp/err"; rc=$?; ok=1 ;;
    *) (cd "$root" && timeout 300 bash -c "$line") >"$tmp/out" 2>"$tmp/err"; rc=$? ;;
  esac
  ran=$((ran + 1))
  if [ "$rc" -ne "$ok" ]; then
    echo "FAIL (exit $rc, expected $ok): $line"
    tail -n 3 "$tmp/err" | sed 's/^/    /'
    fail=1
  fi
done <"$tmp/examples"
echo "README examples: $ran run, $skipped [gpu] skipped"
[ "$ran" -ge 10 ] || { echo "FAIL: fewer than 10 README examples found"; fail=1; }
[ $fail -eq 0 ] && echo "test_readme_examples: all pass"
exit $fail

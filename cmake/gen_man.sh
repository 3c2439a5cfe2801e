#!/bin/sh
# gen_man.sh BIN OUTDIR: writes man pages (section 1) from the program's own --help: ecocompute.1 for
# the program and ecocompute-CMD.1 for each subcommand, so the pages always match the binary.
set -eu
bin=$1; out=$2
mkdir -p "$out"
version=$("$bin" version 2>/dev/null | head -n 1 || echo ecocompute)
# roff: a leading '.' or '\'' would be read as a request, and '\' starts an escape.
to_roff() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
page() { # page NAME SUMMARY HELP_TEXT_FILE
    {
        printf '.TH %s 1 "" "%s" "User Commands"\n' "$(echo "$1" | tr a-z A-Z)" "$version"
        printf '.SH NAME\n%s \\- %s\n' "$1" "$2"
        printf '.SH DESCRIPTION\n.nf\n'
        to_roff < "$3"
        printf '.fi\n.SH SEE ALSO\necocompute(1)\n'
    } > "$out/$1.1"
}
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
"$bin" --help > "$tmp"
page ecocompute "measure and lower the energy of LLM inference on NVIDIA GPUs" "$tmp"
"$bin" --help | awk '/^  [a-z]/ {print $1}' | while read -r cmd; do
    summary=$("$bin" --help | awk -v c="$cmd" '$1 == c {$1=""; sub(/^ +/, ""); print}')
    "$bin" "$cmd" --help > "$tmp" 2>&1 || true
    page "ecocompute-$cmd" "$summary" "$tmp"
done

# Shared helpers for the end-to-end tests. Usage: source lib.sh BIASLAB SOURCE_DIR
set -euo pipefail
BIASLAB=$1
SRC=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/biaslab_e2e_XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_status CODE PATTERN... -- CMD...: runs CMD, checks its exit status and that stderr+stdout contain each PATTERN.
expect_status() {
  local want=$1; shift
  local patterns=()
  while [[ $1 != -- ]]; do patterns+=("$1"); shift; done
  shift
  local out status=0
  out=$("$@" 2>&1) || status=$?
  [[ $status == "$want" ]] || fail "expected exit $want, got $status from: $* -- output: $out"
  for p in "${patterns[@]}"; do
    grep -qF -- "$p" <<<"$out" || fail "output of '$*' lacks '$p': $out"
  done
  echo "ok: exit $status: $*"
}

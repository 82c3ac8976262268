# Shared helpers for the end-to-end tests. Usage: source lib.sh BIASLAB SOURCE_DIR
set -euo pipefail
BIASLAB=$1
SRC=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/biaslab_e2e_XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# same_value WHAT A B: A and B are one non-empty value. An empty one (a missing key, a read
# that failed inside $(...)) never matches, so two failed reads cannot pass as equal.
same_value() { [[ -n $2 && $2 == "$3" ]] || fail "$1: '$2' vs '$3'"; }
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

# shellcheck shell=bash
# Helpers for the test scripts: source it, then state expectations.  The
# first expectation that does not hold ends the test with status 1.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

# fail MESSAGE: end the test, saying what did not hold.
fail() {
	echo "FAILED: $*" >&2
	exit 1
}

# expect_status WANT GOT WHAT: fail unless the exit status GOT is WANT.
expect_status() {
	[ "$2" -eq "$1" ] || fail "$3: exit status $2, expected $1"
}

# expect_file_is FILE TEXT WHAT: fail unless FILE holds exactly TEXT.
expect_file_is() {
	[ "$(cat "$1")" = "$2" ] ||
		fail "$3: got '$(head -c 300 "$1")', expected '$2'"
}

# TEST_TMP: a scratch directory of the test's own, removed when it ends.
TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/lab3-test.XXXXXX") || fail "mktemp failed"
trap 'rm -rf "$TEST_TMP"' EXIT

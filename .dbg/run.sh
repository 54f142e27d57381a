set -u
SENDER=.dbg/sender; WORK=.dbg
T=5; GRADE_LIMIT=60; SECRET=/tmp/grade-secret; OUT=/tmp/grade-out
. tests/receiver-lib.sh
eval "$(sed -n '/^# result NAME/,/^# The checks, in scripts/p' scripts/lib/grade-bed.sh)"
check_transfer many-windows grade-many $(((3 << 20) + 12345)) -w 256K -n 2
ls -la /dev/fd /proc/self/fd 2>&1 | head -3

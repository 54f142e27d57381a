# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# grade-class.sh OUT DEPTH JOBS SUBMISSIONS: scripts/grade for a folder of
# submissions, one per student, run from the repository root.  An entry
# of SUBMISSIONS is ID.c (the student's sender.c) or a directory ID that
# holds sender.c (and, at DEPTH verbs, the student's client.c and
# common.c; without one, the kit's, whose TODOs fail).  Names that start with '.' are skipped.
#
# Each submission is built against the kit (scripts/handout/build at
# DEPTH), with the kit's own flags, in the sandbox, and graded by
# scripts/grade -b like a single sender.  Only regular files are taken
# from a submission (a symbolic link could name any file of this host).
# It writes:
#   OUT/gradebook.csv   id,score,max,status,then each check's points
#                       (status: graded, build failed, or bed failed),
#                       then similarity,similar_to (similar_work())
#   OUT/similarity.csv, OUT/similarity.txt  which submissions share their
#                       own code, with each other or the reference
#   OUT/ID/results.json Gradescope's form, as scripts/grade writes it
#   OUT/ID/log          the build's output, then the scorecard
# and shows its progress on stderr.  A submission that does not build
# costs only its row; one that hangs, only its row and its time (each
# run GRADE_LIMIT, all its checks GRADE_BUDGET: scripts/lib/grade-bed.sh).
# A second run grades again only the submissions whose files, or whose
# grader, changed since (OUT/ID/digest).
#
# JOBS submissions are graded at once, each in a bed of its own (a VM of
# RXE_VM_CPUS virtual CPUs, 1 here, and RXE_VM_MEM of memory), in its own
# sandbox, into its own OUT/ID; never more than this host's CPUs and
# memory hold without slowing a bed (bed_slots), since the checks' time
# limits are the same at any JOBS.  The gradebook is the same at
# any JOBS: its rows are in the submissions' order, and each row is what
# its own bed saw.  The progress lines come as submissions end.
#
# Exit status: 0 when every submission was graded (whatever its score);
# 1 when one could not be (build or bed failed); 2 on a usage error, or
# when grading one failed in the grader itself (it names the
# submission, and grading stops); 4 when the submissions cannot be
# sandboxed here (grading stops at the first).  A run that stops leaves
# no gradebook, and no folder of a submission it had not finished.
set -u
OUT=$1
DEPTH=$2
JOBS=$3
SUBMISSIONS=${4%/}

# class_fail MESSAGE: end the run, saying why.
class_fail() {
	echo "grade: $*" >&2
	exit 2
}

[ -d "$SUBMISSIONS" ] || class_fail "$SUBMISSIONS: not a directory"
mkdir -p "$OUT" || class_fail "cannot create $OUT"
OUT=$(cd "$OUT" && pwd -P) || exit 2
SUBMISSIONS=$(cd "$SUBMISSIONS" && pwd -P) || exit 2
case $OUT/ in
"$SUBMISSIONS"/*) class_fail "-o $OUT is inside $SUBMISSIONS: put it elsewhere" ;;
esac
case $SUBMISSIONS/ in
"$OUT"/*) class_fail "$SUBMISSIONS is inside -o $OUT: put it elsewhere" ;;
esac
WORK=$(mktemp -d "$PWD/.grade-class.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT

# The checks' names and points, in scripts/grade's order, for the
# gradebook's columns.
mapfile -t NAMES < <(sed -n 's/^\t"\([a-z-]*\)|[0-9]*|[a-z]*"$/\1/p' \
	scripts/grade)
mapfile -t POINTS < <(sed -n 's/^\t"[a-z-]*|\([0-9]*\)|[a-z]*"$/\1/p' \
	scripts/grade)
[ "${#NAMES[@]}" -gt 0 ] && [ "${#NAMES[@]}" -eq "${#POINTS[@]}" ] ||
	class_fail "cannot read scripts/grade's checks"

# The grader's own digest: a submission graded by another grader, or at
# another depth, is graded again.
GRADER=$(cat scripts/grade scripts/lib/*.sh scripts/lib/guest-init ./*.c ./*.h \
	server/*.[ch] cli/*.[ch] lib/*.[ch] tests/evil-receiver.c tests/evil.h \
	tests/testlib.[ch] scripts/handout/* | sha256sum | cut -c 1-64)

# The kit, built once: each submission's build copies it, objects and
# all, so that only the student's files are compiled.
echo "grade: building the kit (depth $DEPTH)" >&2
# (Its names start with '.': no student's ID can be one of them.)  With
# GRADE_KIT, a kit built already (the autograder's, which carries no
# reference solution) is taken as it is.
if [ -n "${GRADE_KIT:-}" ]; then
	cp -a "$GRADE_KIT" "$WORK/.kit" >"$WORK/.kit.log" 2>&1
else
	DEPTH=$DEPTH bash scripts/handout/build "$WORK/.kit" >"$WORK/.kit.log" 2>&1
fi &&
	make -C "$WORK/.kit" --no-print-directory sender >>"$WORK/.kit.log" 2>&1 ||
	{ tail -n 20 "$WORK/.kit.log" >&2; class_fail "cannot build the kit"; }

# regular PATH: succeed if PATH is a regular file, not a link to one.
regular() {
	[ -f "$1" ] && [ ! -L "$1" ]
}

# sources ENTRY: the student's files of ENTRY, one per line ("" if none).
sources() {
	if [ -d "$1" ] && [ ! -L "$1" ]; then
		regular "$1/sender.c" && echo "$1/sender.c"
		if [ "$DEPTH" = verbs ]; then
			regular "$1/client.c" && echo "$1/client.c"
			regular "$1/common.c" && echo "$1/common.c"
		fi
	elif regular "$1"; then
		echo "$1"
	fi
}

# has_sender ENTRY: succeed if ENTRY is, or holds, a sender.c to take.
has_sender() {
	if [ -d "$1" ]; then
		[ ! -L "$1" ] && regular "$1/sender.c"
	else
		regular "$1"
	fi
}

# stage ID ENTRY: the kit with ID's files in it, in WORK/ID, for
# scripts/grade -b to build in the sandbox.
stage() {
	local id=$1 entry=$2 dir=$WORK/$1 src
	cp -a "$WORK/.kit" "$dir" || return 1
	rm -f "$dir/sender"
	while read -r src; do
		[ -n "$src" ] || continue
		case $src in
		*/client.c) cp "$src" "$dir/client.c" ;;
		*/common.c) cp "$src" "$dir/common.c" ;;
		*) cp "$src" "$dir/sender.c" ;;
		esac
	done < <(sources "$entry")
	# Newer than the kit's objects: the student's files (client.c and
	# common.c stand at the kit's top at depth verbs only; at the
	# default depth they are the framework's, in framework/).
	touch "$dir/sender.c"
	[ "$DEPTH" != verbs ] || touch "$dir/client.c" "$dir/common.c"
}

# zero_results REASON: OUT/ID/results.json for a submission that was not
# graded: every check 0, REASON in each one's output.
zero_results() {
	local id=$1 reason=$2 i tests=""
	for i in "${!NAMES[@]}"; do
		tests+="${tests:+,}
    {\"name\": \"${NAMES[i]}\", \"score\": 0, \"max_score\": ${POINTS[i]}, \"output\": \"not run: $reason\"}"
	done
	printf '{\n  "score": 0,\n  "tests": [%s\n  ]\n}\n' "$tests" \
		>"$OUT/$id/results.json"
}

# csv_field TEXT: TEXT as a CSV field, quoted when it must be; one that
# a spreadsheet would take for a formula (=, +, -, @) gets a ' first,
# and so does one that starts with ' (a reader takes one ' off).
csv_field() {
	local text=$1
	case $text in [=+@\'-]*) text="'$text" ;; esac
	case $text in
	*[\",$'\r\n']*) printf '"%s"' "${text//\"/\"\"}" ;;
	*) printf '%s' "$text" ;;
	esac
}

# row ID STATUS: ID's gradebook row, from OUT/ID/card (the scorecard) when
# it was graded; all zeros otherwise.
row() {
	local id=$1 status=$2 i got score=0 max=0 cells=""
	for i in "${!NAMES[@]}"; do
		got=0
		[ "$status" = graded ] &&
			got=$(awk -v n="${NAMES[i]}" '$1 == n { split($2, p, "/");
				print p[1] + 0; exit }' "$OUT/$id/card")
		score=$((score + ${got:-0}))
		max=$((max + POINTS[i]))
		cells+=",${got:-0}"
	done
	printf '%s,%d,%d,%s%s\n' "$(csv_field "$id")" "$score" "$max" \
		"$status" "$cells"
}

# row_status ID: the status field of OUT/ID/row (counted from the row's
# end: an ID may hold a quoted comma).
row_status() {
	local fields
	IFS=, read -r -a fields <"$OUT/$1/row"
	echo "${fields[${#fields[@]} - ${#NAMES[@]} - 1]}"
}

# grade_one N ID ENTRY: build and grade one submission, the Nth of the
# folder, into OUT/ID, unless OUT/ID/digest says it was, as it is now;
# its row in OUT/ID/row, and its progress line on stderr.  Run in a
# subshell of its own (the pool's): an exit ends this submission only.
grade_one() {
	local n=$1 id=$2 entry=$3 digest status start=$SECONDS fields k
	local note=
	digest=$(sources "$entry" | while IFS= read -r f; do
		printf '%s\n' "$f" && cat -- "$f"; done | sha256sum | cut -c 1-64)
	digest="$digest $GRADER $DEPTH"
	# (A bed that failed is graded again: that was the bed, not them.)
	if [ -f "$OUT/$id/row" ] && [ "$(row_status "$id")" != "bed failed" ] &&
		[ "$(cat "$OUT/$id/digest" 2>/dev/null)" = "$digest" ]; then
		note=", unchanged since the last run"
	else
		grade_submission "$id" "$entry" || exit
		echo "$digest" >"$OUT/$id/digest"
	fi
	# (the row's fields from the end: an ID may hold a quoted comma)
	IFS=, read -r -a fields <"$OUT/$id/row"
	k=$((${#fields[@]} - ${#NAMES[@]}))
	echo "grade: [$n/${#ENTRIES[@]}] $(shown "$id"):" \
		"${fields[k - 3]}/${fields[k - 2]}," \
		"${fields[k - 1]}$note ($((SECONDS - start)) s)" >&2
}

# grade_submission ID ENTRY: build and grade ENTRY into a fresh OUT/ID,
# and write its row.  Fails with 4 when it cannot be sandboxed here
# (nothing of it ran, and OUT/ID is removed), 2 when the kit cannot be
# copied for it.
grade_submission() {
	local id=$1 entry=$2 status
	rm -rf "${OUT:?}/$id"
	mkdir -p "$OUT/$id"
	if ! has_sender "$entry"; then
		echo "== no sender.c (a regular file) in $entry" >"$OUT/$id/log"
		status="build failed"
		zero_results "$id" "no sender.c in the submission"
	elif ! stage "$id" "$entry"; then
		echo "grade: cannot copy the kit for $(shown "$id")" >&2
		return 2
	else
		echo "== grade: scripts/grade -b (depth $DEPTH)" >>"$OUT/$id/log"
		scripts/grade -b -o "$OUT/$id" "$WORK/$id" \
			>"$OUT/$id/card" 2>>"$OUT/$id/log"
		case $? in
		0 | 1) status=graded ;;
		3) status="build failed"
		   zero_results "$id" "it does not build (see its log)" ;;
		4) tail -n 1 "$OUT/$id/log" >&2
		   rm -rf "${OUT:?}/$id" "${WORK:?}/$id"
		   return 4 ;;
		*) status="bed failed"
		   zero_results "$id" "the bed failed (see its log)" ;;
		esac
		cat "$OUT/$id/card" >>"$OUT/$id/log"
	fi
	rm -rf "${WORK:?}/$id"
	row "$id" "$status" >"$OUT/$id/row"
}

# shown TEXT: TEXT with every byte that is not printable ASCII as '?':
# an ID on the terminal (no escape, no bidi override).
shown() {
	local LC_ALL=C
	printf '%s' "${1//[^[:print:]]/?}"
}

# bed_slots: how many beds this host runs at once without slowing any,
# and why that many, as "N REASON" (GRADE_JOBS_MAX, if set, instead): a
# bed of one virtual CPU keeps one CPU of this host busy (QEMU's TCG
# thread, and its I/O for the bed's files), so one CPU per virtual CPU,
# and one CPU for the rest (the grader, the build's and the big file's
# I/O): two beds on 2 CPUs took 74 to 79 s for larger-than-memory
# instead of 56 (docs/instructor.md, "Grading in parallel").  And a
# bed's memory (224 MiB: scripts/grade), with 256 MiB for QEMU and the
# host's side, must fit in what this host has available.  A native bed
# (RXE_BED=native, or a device of your own) is one device: one bed.
bed_slots() {
	local cpus by_cpu by_mem
	if [ -n "${GRADE_JOBS_MAX:-}" ]; then
		echo "$GRADE_JOBS_MAX GRADE_JOBS_MAX is $GRADE_JOBS_MAX"
		return
	fi
	if [ "${RXE_BED:-}" = native ] || [ -n "${RXE_DEV:-}" ]; then
		echo "1 the bed is this host's own RDMA device, one for all"
		return
	fi
	cpus=$(nproc)
	by_cpu=$(( (cpus - 1) / RXE_VM_CPUS ))
	by_mem=$(( $(awk '$1 == "MemAvailable:" { print int($2 / 1024) }' \
		/proc/meminfo) / (${RXE_VM_MEM%M} + 256) ))
	if [ "$by_mem" -lt "$by_cpu" ]; then
		echo "$((by_mem > 0 ? by_mem : 1)) this host has memory for" \
			"$by_mem beds of ${RXE_VM_MEM} and QEMU's 256 MiB"
	else
		echo "$((by_cpu > 0 ? by_cpu : 1)) this host has $cpus CPUs, a" \
			"bed takes $RXE_VM_CPUS and the rest 1 (more at once would" \
			"slow each bed, and the checks' time limits could fail" \
			"correct senders)"
	fi
}

# cap_jobs: JOBS, capped at bed_slots, saying so when it is.
cap_jobs() {
	local slots why
	case ${GRADE_JOBS_MAX-1} in
	'' | *[!0-9]* | 0* | ?????*) class_fail "GRADE_JOBS_MAX must be a number of beds, 1 to 9999, not '$GRADE_JOBS_MAX'" ;;
	esac
	case $RXE_VM_CPUS in
	'' | *[!0-9]* | 0*) class_fail "RXE_VM_CPUS must be a number of virtual CPUs, 1 or more, not '$RXE_VM_CPUS'" ;;
	esac
	case ${RXE_VM_MEM:-} in
	[1-9]*M) ;;
	*) class_fail "RXE_VM_MEM must be in MiB (scripts/grade's 224M), not '${RXE_VM_MEM:-}'" ;;
	esac
	read -r slots why < <(bed_slots)
	if [ "$JOBS" -gt "$slots" ]; then
		echo "grade: -j $JOBS capped at $slots: $why" \
			"(GRADE_JOBS_MAX sets the cap)" >&2
		JOBS=$slots
	fi
}

# list_entries: ENTRIES, the submissions (ID.c or ID/) in byte order,
# read NUL-separated.  A name with a line break is refused (no ID has
# one, and the lines of its files' list would split it); one with
# another control character, a terminal escape say, is graded, and
# shown with '?' for it.
list_entries() {
	local entry dup
	mapfile -d '' -t ENTRIES < <(find "$SUBMISSIONS" -mindepth 1 \
		-maxdepth 1 \( -type d -o -name '*.c' \) ! -name '.*' -print0 |
		LC_ALL=C sort -z)
	[ "${#ENTRIES[@]}" -gt 0 ] || class_fail "$SUBMISSIONS holds no submission"
	for entry in "${ENTRIES[@]}"; do
		case ${entry##*/} in
		*[$'\n\r']*) class_fail "$SUBMISSIONS holds a name with a" \
			"line break, $(printf %q "${entry##*/}"): rename it to" \
			"the student's ID" ;;
		esac
	done
	# Two entries of one ID (alice.c and alice/) would share OUT/alice.
	dup=$(for entry in "${ENTRIES[@]}"; do basename "$entry" .c; done |
		LC_ALL=C sort | uniq -d | head -n 1)
	[ -z "$dup" ] || class_fail "$SUBMISSIONS holds two submissions of" \
		"$(shown "$dup") (a file and a folder)"
}

# stop_all: stop every submission still being graded (BY_PID: each
# job not yet waited for, even one whose first process died and left
# its scripts/grade behind), each process group whole (its
# scripts/grade, bed and QEMU), and remove what they left (a submission
# without a row was not graded in this run).
stop_all() {
	local pid entry id groups=() tries=0
	set +m	# (no "Terminated" line for each job stopped)
	for pid in "${!BY_PID[@]}"; do
		kill -TERM -- "-$pid" 2>/dev/null && groups+=("$pid")
	done
	# Bounded: 15 s for the beds to stop their VMs (scripts/rxe-run
	# does on SIGTERM, QEMU within 5 s), then SIGKILL.
	while [ "${#groups[@]}" -gt 0 ] && [ "$tries" -lt 30 ]; do
		for pid in "${!groups[@]}"; do
			kill -0 -- "-${groups[pid]}" 2>/dev/null || unset "groups[$pid]"
		done
		[ "${#groups[@]}" -eq 0 ] || sleep 0.5
		tries=$((tries + 1))
	done
	for pid in "${groups[@]}"; do
		kill -KILL -- "-$pid" 2>/dev/null
	done
	wait
	for entry in "${ENTRIES[@]}"; do
		id=$(basename "$entry" .c)
		[ -f "$OUT/$id/row" ] || rm -rf "${OUT:?}/$id"
	done
}

# wait_one: wait for one submission to end (BY_PID: its ID, the job's
# process group, dropped then); a failure of the grader's own ends them
# all: 4, nothing can be sandboxed here; else 2, naming the submission.
wait_one() {
	local status pid id
	# Bounded: each submission's beds end within their RXE_TIMEOUT.
	wait -n -p pid
	status=$?
	id=${BY_PID[$pid]}
	unset "BY_PID[$pid]"
	case $status in
	0) ;;
	4) echo "grade: cannot sandbox a submission here: stopped" >&2
	   exit 4 ;;
	*) echo "grade: grading $(shown "$id") ended with" \
		"status $status: stopped" >&2
	   exit 2 ;;
	esac
}

# run_pool: grade every entry, JOBS at once, each in a process group of
# its own (set -m), so that stopping one stops its bed too; stdin is
# /dev/null (a job of a shell with job control keeps the terminal's).
run_pool() {
	local i running=0
	set -m
	for i in "${!ENTRIES[@]}"; do
		if [ "$running" -ge "$JOBS" ]; then
			wait_one
			running=$((running - 1))
		fi
		grade_one $((i + 1)) "$(basename "${ENTRIES[i]}" .c)" \
			"${ENTRIES[i]}" </dev/null &
		BY_PID[$!]=$(basename "${ENTRIES[i]}" .c)
		running=$((running + 1))
	done
	while [ "$running" -gt 0 ]; do
		wait_one
		running=$((running - 1))
	done
	set +m
}

# similar_work: each submission's own code (what it wrote in the kit's
# TODOs) against every other's and the reference's, by Debian's sim_c
# (scripts/lib/similarity.py): OUT/similarity.csv and OUT/similarity.txt
# (the pairs at or over GRADE_SIMILAR percent, default 40, their matching
# lines side by side), and the gradebook's last two columns in
# WORK/.sim/similarity.d/columns.  Every submission is compared, graded
# or not (one that does not build may still be a copy).  On a failure it
# says why and the gradebook goes without the columns.
similar_work() {
	local n=0 entry src dir reference=.
	[ -z "${GRADE_KIT:-}" ] || reference=-	# (a kit without the reference)
	compare_any || return 0
	mkdir -p "$WORK/.sim" && : >"$WORK/.sim/manifest" || return 1
	for entry in "${ENTRIES[@]}"; do
		n=$((n + 1))
		dir=$WORK/.sim/$n
		mkdir "$dir" || return 1
		while read -r src; do
			case $src in
			'') ;;
			*/client.c) cp "$src" "$dir/client.c" ;;
			*/common.c) cp "$src" "$dir/common.c" ;;
			*) cp "$src" "$dir/sender.c" ;;
			esac
		done < <(sources "$entry")
		printf '%s\t%s\n' "$dir" "$(basename "$entry" .c)" \
			>>"$WORK/.sim/manifest"
	done
	python3 scripts/lib/similarity.py -t "${GRADE_SIMILAR:-40}" \
		"$WORK/.kit" "$reference" "$OUT" "$WORK/.sim/manifest" || {
		echo "grade: the similarity check failed: the gradebook has" \
			"no similarity column" >&2
		rm -f "$OUT/similarity.d/columns"
		return 0
	}
	mv "$OUT/similarity.d/columns" "$WORK/.sim/columns" &&
		rm -rf "$OUT/similarity.d"
}

# compare_any: succeed if there are two to compare: two submissions, or
# one and the reference (the autograder's one, with a kit that carries no
# reference, has none).
compare_any() {
	[ "${#ENTRIES[@]}" -gt 1 ] || [ -z "${GRADE_KIT:-}" ]
}

# write_gradebook: OUT/gradebook.csv from the rows, in the entries'
# order whatever order they were graded in, each with its similarity
# when similar_work() gave one (written whole, then renamed: a run
# stopped half way leaves none).
write_gradebook() {
	local entry pct other columns=$WORK/.sim/columns
	[ -s "$columns" ] || columns=/dev/null
	{
		printf 'id,score,max,status'
		printf ',%s' "${NAMES[@]}"
		[ "$columns" = /dev/null ] || printf ',similarity,similar_to'
		printf '\n'
		for entry in "${ENTRIES[@]}"; do
			tr -d '\n' <"$OUT/$(basename "$entry" .c)/row"
			if IFS=$'\t' read -r pct other <&3; then
				case $other in
				'') other= ;;
				reference) other='(reference)' ;;
				*) other=$(csv_field "$(basename \
					"${ENTRIES[other - 1]}" .c)") ;;
				esac
				printf ',%s,%s' "$pct" "$other"
			fi
			printf '\n'
		done 3<"$columns"
	} >"$OUT/.gradebook.csv" && mv "$OUT/.gradebook.csv" "$OUT/gradebook.csv"
}

list_entries
! compare_any || command -v sim_c >/dev/null ||
	class_fail "sim_c is missing (the similarity check): scripts/install-deps installs similarity-tester"
declare -A BY_PID=()	# the jobs running: process group -> ID
# One virtual CPU a bed: grading takes as long as with the bed's usual
# two (140 s for the reference, either way), and keeps one CPU of this
# host busy rather than 1.1 to 1.7 (docs/instructor.md, "Grading in
# parallel").
export RXE_VM_CPUS=${RXE_VM_CPUS:-1}
cap_jobs
# The receivers every submission's grading runs, built once here (not by
# each of them at once: GRADE_RECEIVERS_BUILT tells scripts/grade -b).
if [ -z "${GRADE_KIT:-}" ]; then
	make --no-print-directory -s receiver tests/evil-receiver >&2 ||
		class_fail "cannot build ./receiver and tests/evil-receiver"
fi
export GRADE_RECEIVERS_BUILT=1
# (The last run's gradebook goes: one is written when this run is over.)
rm -f "$OUT/gradebook.csv"
trap 'stop_all; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
run_pool
# (A similarity check that cannot be staged costs its two columns, never
# the grades: the gradebook is written without them.)
similar_work || { rm -f "$WORK/.sim/columns"; echo "grade: cannot stage" \
	"the submissions for the similarity check: the gradebook has no" \
	"similarity column" >&2; }
write_gradebook || class_fail "cannot write $OUT/gradebook.csv"

unfinished=0
for entry in "${ENTRIES[@]}"; do
	[ "$(row_status "$(basename "$entry" .c)")" = graded ] ||
		unfinished=$((unfinished + 1))
done
echo "grade: wrote $OUT/gradebook.csv (${#ENTRIES[@]} submissions)" >&2
[ "$unfinished" -eq 0 ]

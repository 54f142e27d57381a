# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# stages.sh: make check's stages (scripts/grade -c), from the evidence of
# one traced run (scripts/lib/grade-bed.sh's traced(): its CHECK, SAID,
# STATUS and TRACE lines) and of the checks that ran.  Sourced by
# scripts/grade, on the host, after the bed.
#
#	stages_read LINES [SRC_DIR]   read the stages (scripts/lib/stages.txt),
#	                              the evidence in LINES, and which TODOs
#	                              the sources in SRC_DIR still leave
#	                              unwritten; sets STAGE_STATUS[N] (pass,
#	                              fail, "not written yet", "not reached"),
#	                              STAGE_WHY[N] and STAGE_NEXT
#	stages_print [ONLY]           the table, the next thing to do, and
#	                              beside it the line the run stopped at
#	                              (the sender's first on stderr)
#	stages_json FILE              the stages as RUN.json's "stages" (for
#	                              scripts/lib/chart.py)
#
# A stage passes on evidence: what the receiver saw of the run (a
# session, FILE_INFO, a DONE, a good verdict, the key) or, for what the
# receiver cannot see, the run going on to a later stage's TODO (its "NAME
# not implemented" line: the kit's own words, not the student's).  A
# stage whose TODOs are not all written is "not written yet", never a
# failure: a run stops at the first TODO it reaches, which is always the
# first in the run's order (the project's tests keep it so).  The first stage
# that neither passes nor waits to be written fails, with the traced
# run's reason; the ones after it are "not reached".

STAGE_FILE=scripts/lib/stages.txt
STAGE_NAME=() STAGE_SHOWS=() STAGE_TODOS=() STAGE_STATUS=() STAGE_WHY=()
STAGE_LAST=0 STAGE_NEXT= STAGE_SAID=

# unwritten_todos SRC_DIR: each TODO still a stub in SRC_DIR's sender.c,
# client.c and common.c, as "NAME|FILE" lines.
unwritten_todos() {
	local f
	for f in sender.c client.c common.c; do
		[ -f "$1/$f" ] || continue
		grep -o 'return not_implemented([a-z]*, "[^"]*");' "$1/$f" |
			sed "s/.*, \"//; s/\");\$/|$f/"
	done
}

# check_line NAME: the CHECK line of NAME in LINES, or nothing.
check_line() {
	grep -m 1 "^CHECK $1 " "$STAGE_LINES"
}

# stage_evidence N: succeed if the evidence shows that stage N passed.
stage_evidence() {
	local summary
	[ -n "$STUB_STAGE" ] && [ "$STUB_STAGE" -gt "$1" ] && return 0
	summary=$(grep -m 1 '^TRACE [0-9.]* summary: ' "$STAGE_LINES")
	case $1 in
	1 | 2 | 3) [[ $summary == *": session "[0-9]*" from "* ]] ;;
	4) grep -q '^TRACE [0-9.]* receiver: received FILE_INFO' "$STAGE_LINES" ;;
	5) grep -q '^TRACE [0-9.]* receiver: received DONE' "$STAGE_LINES" ;;
	6) grep -q '^TRACE [0-9.]* receiver: send VERDICT ([0-9]* bytes): good$' \
		"$STAGE_LINES" ;;
	7) [[ $(check_line "$RUN_NAME") == "CHECK $RUN_NAME pass "* ]] &&
		! grep -q '^CHECK lab-[a-z-]* fail' "$STAGE_LINES" ;;
	8) grep -q '^CHECK \(many-windows\|larger-than-memory\|over-max\|bad-verdict\|silent-receiver\|receiver-killed\) ' "$STAGE_LINES" &&
		! grep -q '^CHECK \(many-windows\|larger-than-memory\|over-max\|bad-verdict\|silent-receiver\|receiver-killed\) fail' "$STAGE_LINES" ;;
	esac
}

# stage_failure N: why stage N failed, from the evidence.
stage_failure() {
	local line
	case $1 in
	7 | 8)
		line=$(grep '^CHECK [a-z-]* fail ' "$STAGE_LINES" |
			grep -v "^CHECK $RUN_NAME " | head -n 1)
		if [ "$1" = 7 ] && [[ $(check_line "$RUN_NAME") == *" fail "* ]]; then
			line=$(check_line "$RUN_NAME")
		fi
		[ -n "$line" ] || { echo "its checks did not run"; return; }
		line=${line#CHECK }
		echo "${line%% *}: ${line#* fail }"
		;;
	*)
		line=$(check_line "$RUN_NAME")
		echo "${line#CHECK $RUN_NAME fail }"
		;;
	esac
}

stages_read() {
	local n name shows todos todo file unwritten said first_unwritten=
	STAGE_LINES=$1
	STAGE_LAST=0
	while IFS='|' read -r n name shows todos; do
		case $n in '' | '#'*) continue ;; esac
		STAGE_NAME[n]=$name STAGE_SHOWS[n]=$shows STAGE_TODOS[n]=$todos
		STAGE_LAST=$n
	done <"$STAGE_FILE"
	RUN_NAME=$(sed -n 's/^TRACED //p' "$STAGE_LINES" | head -n 1)
	said=$(sed -n 's/^SAID //p' "$STAGE_LINES" | head -n 1)
	STAGE_SAID=$said
	# The TODO the run stopped at: the kit's line "NAME not implemented".
	STUB= STUB_STAGE=
	for ((n = 1; n <= STAGE_LAST; n++)); do
		IFS=';' read -ra todos <<<"${STAGE_TODOS[n]}"
		for todo in "${todos[@]}"; do
			[[ $said == *"$todo not implemented" ]] &&
				STUB=$todo STUB_STAGE=$n
		done
	done
	unwritten=$( [ -n "${2:-}" ] && unwritten_todos "$2")
	[ -z "$STUB" ] || unwritten+=$'\n'"$STUB|"
	STAGE_NEXT=
	local failed=0 blocked=0
	for ((n = 1; n <= STAGE_LAST; n++)); do
		local mine=()
		IFS=';' read -ra todos <<<"${STAGE_TODOS[n]}"
		for todo in "${todos[@]}"; do
			file=$(grep -m 1 -F "$todo|" <<<"$unwritten" | cut -d'|' -f2)
			grep -q -F "$todo|" <<<"$unwritten" || continue
			mine+=("\"$todo\"${file:+ ($file)}")
			[ -n "$first_unwritten" ] ||
				first_unwritten="the TODO \"$todo\"${file:+ in $file}"
		done
		STAGE_WHY[n]=
		if [ -z "$RUN_NAME" ] && [ "$n" -lt 8 ]; then
			STAGE_STATUS[n]="not run"
		elif stage_evidence "$n"; then
			STAGE_STATUS[n]=pass
		elif [ ${#mine[@]} -gt 0 ]; then
			STAGE_STATUS[n]="not written yet"
			STAGE_WHY[n]=${mine[0]}
			for todo in "${mine[@]:1}"; do
				STAGE_WHY[n]+=", $todo"
			done
			blocked=1
		elif [ "$failed" -eq 0 ] && [ "$blocked" -eq 0 ] && [ -n "$RUN_NAME$(grep -m 1 '^CHECK ' "$STAGE_LINES")" ] &&
			{ [ "$n" -lt 8 ] || grep -q '^CHECK \(many-windows\|over-max\) ' "$STAGE_LINES"; }; then
			STAGE_STATUS[n]=fail
			STAGE_WHY[n]=$(stage_failure "$n")
			failed=$n
			[ -n "$STAGE_NEXT" ] ||
				STAGE_NEXT="stage $n (${STAGE_NAME[n]}) fails: fix it, then make check again"
		else
			STAGE_STATUS[n]="not reached"
		fi
		if [ "${STAGE_STATUS[n]}" = "not written yet" ] && [ -z "$STAGE_NEXT" ]; then
			STAGE_NEXT="write $first_unwritten, then make check again"
		fi
	done
}

# stages_print [ONLY]: the table (stage ONLY's row alone, if given), what
# to do next, and the line the traced run stopped at: at a TODO not yet
# written, its "NAME not implemented", which names the same TODO as the
# pointer (the project's tests check both at every step).
stages_print() {
	local n
	printf '%-5s %-22s %s\n' stage "" result
	for ((n = 1; n <= STAGE_LAST; n++)); do
		[ -z "${1:-}" ] || [ "$1" = "$n" ] || continue
		printf '%-5s %-22s %s%s\n' "$n" "${STAGE_NAME[n]}" \
			"${STAGE_STATUS[n]}" "${STAGE_WHY[n]:+: ${STAGE_WHY[n]}}"
	done
	[ -z "$STAGE_NEXT" ] || echo "next: $STAGE_NEXT"
	[ -z "$STAGE_NEXT" ] || [ -z "$STAGE_SAID" ] ||
		echo "      where your run stopped: $STAGE_SAID"
}

# stages_json FILE: {"stages": [...]} with each stage's number, name,
# status and reason, for scripts/lib/chart.py's RUN.json; the reasons
# are the grader's lines, which quote the sender: escaped here.
stages_json() {
	local n sep=
	{
		printf '"stages": ['
		for ((n = 1; n <= STAGE_LAST; n++)); do
			printf '%s{"n": %d, "name": %s, "status": %s, "why": %s}' \
				"$sep" "$n" "$(json_string "${STAGE_NAME[n]}")" \
				"$(json_string "${STAGE_STATUS[n]}")" \
				"$(json_string "${STAGE_WHY[n]}")"
			sep=', '
		done
		printf ']'
	} >"$1"
}

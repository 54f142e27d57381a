# SPDX-License-Identifier: MIT
# skeleton.awk: a students' source file from the reference's, at a depth.
#
#	awk -v KIND=sender|client -v DEPTH=messages|verbs \
#	    [-v HINTS=goal -v GOALS=scripts/handout/goals.txt] -f skeleton.awk FILE
#
# Each region of the reference between a comment that opens
#	/* SOLUTION STEP: what to do ... */
# and the line
#	/* END SOLUTION */
# becomes that comment, opening "TODO STEP:" instead, and a return of
# not_implemented(s, "STEP") (KIND=sender: sender.c) or
# not_implemented(conn, "STEP") (KIND=client: client.c), which says "STEP
# not implemented" and fails the run.  A region whose STEP opens with
# "verbs " (the lab's verbs: connecting, registering, the RDMA WRITE) is
# the student's only at DEPTH=verbs; at the default depth, messages, it
# stays code and only its markers go.  With HINTS=goal, the TODO's
# comment is STEP's goal hint from the file GOALS instead (its lines
# after "== STEP"; a TODO with none there is an error); HINTS=steps (the
# default here) keeps the reference's comment.  KEEP, a list of STEPs joined by
# "|", keeps those regions' code too (the tests write a kit's TODOs one
# at a time, from the reference, this way).
#
# not_implemented() goes in before the first "/* ---- " line: for a
# sender, that must be "/* ---- The run ---- */".  Pragmas after the
# #include lines (once) keep the compiler quiet about the provided
# helpers that no step uses yet, and the parameters of a step not written.  A client file at the default depth keeps
# its code and gets neither.  Exits 1, saying why, if the markers do not
# pair up or a marker the skeleton needs is missing.

function die(msg) {
	printf "skeleton.awk: %s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"
	failed = 1
	exit 1
}

BEGIN {
	if (KIND != "sender" && KIND != "client")
		die("KIND must be sender or client")
	if (DEPTH == "")
		DEPTH = "messages"
	if (DEPTH != "messages" && DEPTH != "verbs")
		die("DEPTH must be messages or verbs")
	# What this file gets: stubs, or only its markers removed.
	stubs = KIND == "sender" || DEPTH == "verbs"
	who = KIND == "sender" ? "s" : "conn"
	nkeep = split(KEEP, keep_list, "|")
	for (i = 1; i <= nkeep; i++)
		kept[keep_list[i]] = 1
	if (HINTS == "")
		HINTS = "steps"
	if (HINTS != "goal" && HINTS != "steps")
		die("HINTS must be goal or steps")
	if (HINTS == "goal")
		read_goals()
}

# read_goals: each goal hint of the file GOALS into goal[STEP], its lines
# joined by newlines.
function read_goals(    line, name, n) {
	if (GOALS == "")
		die("HINTS=goal needs GOALS, the goal hints' file")
	while ((n = (getline line < GOALS)) > 0) {
		if (line ~ /^#/)
			continue
		if (line ~ /^== /) {
			name = substr(line, 4)
			continue
		}
		if (name == "" || line == "")
			continue
		if (name in goal)
			goal[name] = goal[name] "\n" line
		else
			goal[name] = line
	}
	if (n < 0)
		die("cannot read " GOALS)
	close(GOALS)
}

# print_goal: STEP's TODO comment, its goal hint.
function print_goal(    n, lines, i) {
	if (!(step in goal))
		die("no goal hint for \"" step "\" in " GOALS)
	print "\t/* TODO " step ":"
	n = split(goal[step], lines, "\n")
	for (i = 1; i <= n; i++)
		print "\t * " lines[i]
	print "\t */"
}

/^#include / { last_include = 1; print; next }
stubs && last_include && !pragma_done && !/^$/ {
	pragma_done = 1
	print "/* The helpers below are yours to use in the steps you write; until"
	print " * a step uses them, the compiler would call them (and a step's"
	print " * parameters) unused. */"
	print "#pragma GCC diagnostic ignored \"-Wunused-function\""
	print "#pragma GCC diagnostic ignored \"-Wunused-parameter\""
	print ""
}

stubs && !stub_done && /^\/\* ---- / {
	if (KIND == "sender" && $0 != "/* ---- The run ---- */")
		die("the first section is not \"/* ---- The run ---- */\"")
	print "/* not_implemented: a step still to write says so, and the run fails. */"
	if (KIND == "sender") {
		print "static int not_implemented(struct sender *s, const char *step)"
		print "{"
		print "\treturn fail(s, LAB3_EXIT_LOCAL, \"%s not implemented\", step);"
	} else {
		print "static int not_implemented(struct lab3_conn *conn, const char *step)"
		print "{"
		print "\treturn conn_error(conn, -ENOSYS, \"%s not implemented\", step);"
	}
	print "}"
	print ""
	stub_done = 1
}

/^\t\/\* SOLUTION [^:]*: / {
	if (in_solution)
		die("SOLUTION inside another SOLUTION")
	in_solution = 1
	regions++
	step = $0
	sub(/^\t\/\* SOLUTION /, "", step)
	sub(/: .*/, "", step)
	blank = 1
	if (step ~ /^verbs /) {
		sub(/^verbs /, "", step)
		blank = DEPTH == "verbs"
	}
	if (step in kept)
		blank = 0
	in_comment = ($0 !~ /\*\/$/)
	if (blank) {
		blanked++
		line = $0
		sub(/\/\* SOLUTION (verbs )?/, "/* TODO ", line)
		if (HINTS == "goal")
			print_goal()
		else
			print line
	}
	next
}

in_solution && in_comment {
	if (blank && HINTS == "steps")
		print
	if ($0 ~ /\*\/$/)
		in_comment = 0
	next
}

/^\t\/\* END SOLUTION \*\/$/ {
	if (!in_solution)
		die("END SOLUTION without SOLUTION")
	in_solution = 0
	if (blank)
		printf "\treturn not_implemented(%s, \"%s\");\n", who, step
	next
}

in_solution && blank { next }

{ print }

END {
	if (failed)
		exit 1
	if (in_solution)
		die("SOLUTION never ended")
	if (regions == 0)
		die("no SOLUTION region")
	if (stubs && (!pragma_done || !stub_done || (blanked == 0 && KEEP == "")))
		die("no #include, no \"/* ---- \" section, or nothing to write")
}

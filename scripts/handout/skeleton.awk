# skeleton.awk: the students' sender.c from the reference sender.c.
#
# Each region of the reference between a comment that opens
#	/* SOLUTION STEP: what to do ... */
# and the line
#	/* END SOLUTION */
# becomes that comment, opening "TODO STEP:" instead, and a return of
# not_implemented(s, "STEP"), which says "STEP not implemented" and
# fails the run.  not_implemented() itself goes in before the line
# "/* ---- The run ---- */", and a pragma after the #include lines (once)
# keeps the compiler quiet about the provided helpers that no step uses
# yet.
# Exits 1, saying why, if the markers do not pair up or a marker the
# skeleton needs is missing.

function die(msg) {
	printf "skeleton.awk: %s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"
	failed = 1
	exit 1
}

/^#include / { last_include = 1; print; next }
last_include && !pragma_done && !/^$/ {
	pragma_done = 1
	print "/* The helpers below are yours to use in the steps you write; until"
	print " * a step uses them, the compiler would call them unused. */"
	print "#pragma GCC diagnostic ignored \"-Wunused-function\""
	print ""
}

$0 == "/* ---- The run ---- */" {
	print "/* not_implemented: a step still to write says so, and the run fails. */"
	print "static int not_implemented(struct sender *s, const char *step)"
	print "{"
	print "\treturn fail(s, LAB3_EXIT_LOCAL, \"%s not implemented\", step);"
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
	line = $0
	sub(/\/\* SOLUTION /, "/* TODO ", line)
	print line
	in_comment = ($0 !~ /\*\/$/)
	next
}

in_solution && in_comment {
	print
	if ($0 ~ /\*\/$/)
		in_comment = 0
	next
}

/^\t\/\* END SOLUTION \*\/$/ {
	if (!in_solution)
		die("END SOLUTION without SOLUTION")
	in_solution = 0
	printf "\treturn not_implemented(s, \"%s\");\n", step
	next
}

in_solution { next }

{ print }

END {
	if (failed)
		exit 1
	if (in_solution)
		die("SOLUTION never ended")
	if (!pragma_done || !stub_done || regions == 0)
		die("no #include, no \"---- The run ----\" line, or no SOLUTION")
}

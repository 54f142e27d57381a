# shellcheck shell=bash
# sandbox.sh: run a submission's code, its build or the sender it built,
# where it can reach nothing of the grader's.  Sourced by
# scripts/lib/grade-bed.sh, which runs as root (in the bed's VM, or on a
# host with its own rxe).
#
# What the code sees: the system's programs and libraries read-only
# (/usr and its links, a few files of /etc that the loader, libibverbs
# and the compiler read), /sys read-only, the RDMA devices, a /proc and
# /dev of its own, an empty /tmp of SANDBOX_TMP bytes, and the paths the
# caller binds in.  Not the checkout, not the kit's grader, not the
# grading secret, not the receiver's output, not other submissions or
# results, not the grader's processes or environment.  It runs as a user
# of its own (SANDBOX_UID, in no group, no capabilities, no new
# privileges), in its own mount, PID, IPC and UTS namespaces.  (A grader
# that is not root, a student's `make check` on a device of their own,
# cannot give it a user of its own: there it runs as the grader's user,
# mapped in a user namespace of its own, which still hides the grader's
# processes and files.  An instructor grades as root.)  Its
# network namespace is the host's: rdma_cm finds the RDMA device's
# addresses there.
#
# Why bubblewrap: it is the sandbox Flatpak and others are built on,
# kept by the same people, and one command line sets up every namespace
# and exactly the mounts listed, with no daemon (the bed's VM has no
# systemd for a transient unit).  util-linux's setpriv drops it to the
# sandbox's user, and prlimit and choom set its limits.  Memory and
# processes are also capped by a cgroup of its own when the grader can
# make one (always in the bed's VM); otherwise the kernel's OOM killer
# takes the sandbox first (oom_score_adj 1000).
#
#   sandbox_check              succeed if sandbox_run can work here; else
#                              print why, one line on stderr
#   sandbox_run [-r SRC:DST]... [-w SRC:DST]... [-C DIR] [-t SECONDS]
#               [-s TMP_BYTES] -- CMD [ARG...]
#                              run CMD in the sandbox: -r binds SRC
#                              read-only at DST, -w read-write; -C is its
#                              working directory (default /tmp); -t
#                              SIGKILLs all of it after SECONDS (exit
#                              status 137; default 600); -s sizes its
#                              /tmp (default SANDBOX_TMP).  Its
#                              stdin, stdout and stderr are the caller's;
#                              no other descriptor goes in.  Returns CMD's
#                              exit status (126 when the sandbox could not
#                              be set up).  Every process it left is
#                              killed when it returns.

SANDBOX_UID=${GRADE_SANDBOX_UID:-64231}	# a user of its own: in no passwd
SANDBOX_NPROC=64		# its processes, all told
SANDBOX_FSIZE=$((16 << 20))	# the largest file it may write
SANDBOX_TMP=$((16 << 20))	# its /tmp, a tmpfs
SANDBOX_NOFILE=1024
SANDBOX_MEMLOCK=$((64 << 20))	# for its RDMA registrations
SANDBOX_CGROUP_ROOT=/sys/fs/cgroup
SANDBOX_LOCK=/run/lock/lab3-sandbox.lock	# one sandbox at a time

# sandbox_check: see above.
sandbox_check() {
	local tool why
	for tool in bwrap setpriv prlimit choom; do
		command -v "$tool" >/dev/null || {
			echo "$tool is not installed (scripts/install-deps)" >&2
			return 1
		}
	done
	if [ "$(id -u)" -eq 0 ] && getent passwd "$SANDBOX_UID" >/dev/null; then
		echo "uid $SANDBOX_UID, the sandbox's, belongs to" \
			"$(getent passwd "$SANDBOX_UID" | cut -d: -f1) here:" \
			"set GRADE_SANDBOX_UID to an unused one" >&2
		return 1
	fi
	if ! why=$(sandbox_run -- /bin/true 2>&1); then
		echo "bubblewrap cannot make a sandbox here as uid $(id -u)" \
			"($(head -n 1 <<<"$why")): run the grader as root" >&2
		return 1
	fi
}

# sandbox_cgroup: make a cgroup for one run, capped in memory and
# processes; print its path, or nothing when none can be made here.
sandbox_cgroup() {
	local cg mem ctl
	# (cgroup2 is mounted here only where nothing is: the bed's VM.  A
	# host's own hierarchy, v1 or v2, is never covered.)
	if ! mountpoint -q "$SANDBOX_CGROUP_ROOT"; then
		mount -t cgroup2 cgroup2 "$SANDBOX_CGROUP_ROOT" 2>/dev/null ||
			return 0
	fi
	[ -e "$SANDBOX_CGROUP_ROOT/cgroup.controllers" ] || return 0
	for ctl in memory pids; do
		grep -qw "$ctl" "$SANDBOX_CGROUP_ROOT/cgroup.subtree_control" ||
			{ echo "+$ctl" >"$SANDBOX_CGROUP_ROOT/cgroup.subtree_control"; } \
			2>/dev/null || return 0
	done
	cg=$(mktemp -d "$SANDBOX_CGROUP_ROOT/lab3-sandbox.XXXXXX" 2>/dev/null) ||
		return 0
	# Three quarters of this machine's memory, and never more than 1
	# GiB.  (Half was too tight for the larger-than-memory check in the
	# grading VM: the file's page cache is charged here, and at the cap
	# an honest sender stalled, 1 run in 3; at three quarters the cap
	# is never reached and the run takes the same time.)
	mem=$(awk '$1 == "MemTotal:" { m = $2 * 768;
		print (m > 1073741824 ? 1073741824 : m); exit }' /proc/meminfo)
	{ echo 0 >"$cg/memory.swap.max"; } 2>/dev/null	# (no swap: no file)
	if echo "$mem" >"$cg/memory.max" &&
		echo "$SANDBOX_NPROC" >"$cg/pids.max"; then
		echo "$cg"
	else
		rmdir "$cg" 2>/dev/null
	fi
}

# sandbox_cgroup_end CGROUP: kill what is left in CGROUP and remove it.
sandbox_cgroup_end() {
	local cg=$1 i
	[ -n "$cg" ] || return 0
	echo 1 >"$cg/cgroup.kill" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		rmdir "$cg" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "sandbox: $cg still holds processes after 5 s" >&2
}

# sandbox_reap: without a cgroup, kill what is left of the sandbox's
# user, and wait until it is gone: the namespace's first process dies
# when bwrap does, but the kernel ends the rest as it can.
sandbox_reap() {
	local i
	for ((i = 0; i < 100; i++)); do
		pkill -KILL -u "$SANDBOX_UID" 2>/dev/null || return 0
		sleep 0.05
	done
	echo "sandbox: processes of uid $SANDBOX_UID still there after 5 s" >&2
}

# sandbox_system_binds: bwrap's arguments for the system's programs and
# libraries, read-only, and the few files of /etc the code needs, into
# the array SYSTEM.  (An array, not a pipe: the bed's /dev has no /dev/fd
# for a process substitution.)
sandbox_system_binds() {
	local d
	SYSTEM=(--ro-bind /usr /usr)
	for d in bin sbin lib lib32 lib64 libx32; do
		if [ -L "/$d" ]; then
			SYSTEM+=(--symlink "$(readlink "/$d")" "/$d")
		elif [ -d "/$d" ]; then
			SYSTEM+=(--ro-bind "/$d" "/$d")
		fi
	done
	# The loader's cache, libibverbs' providers, the compiler's
	# alternatives, and name resolution for a numeric address.  (bwrap
	# would make /etc mode 0700, as root: the sandbox's user could not
	# enter it.)
	SYSTEM+=(--perms 0755 --dir /etc)
	for d in ld.so.cache ld.so.conf ld.so.conf.d libibverbs.d rdma \
		alternatives hosts host.conf nsswitch.conf gai.conf localtime; do
		SYSTEM+=(--ro-bind-try "/etc/$d" "/etc/$d")
	done
}

# sandbox_run: see above.
sandbox_run() {
	local binds=() dir=/tmp limit=600 memlock=$SANDBOX_MEMLOCK cg status
	local tmp=$SANDBOX_TMP lock=
	local user=() drop=() options
	while [ $# -gt 0 ]; do
		case $1 in
		-r | -w)
			# (split at the last ':': SRC may hold one, DST not;
			# the directory above DST made 0755, as for /etc)
			binds+=(--perms 0755 --dir "$(dirname "${2##*:}")")
			if [ "$1" = -r ]; then
				binds+=(--ro-bind "${2%:*}" "${2##*:}")
			else
				binds+=(--bind "${2%:*}" "${2##*:}")
			fi
			shift 2 ;;
		-C) dir=$2; shift 2 ;;
		-s) tmp=$2; shift 2 ;;
		-t) limit=$2; shift 2 ;;
		--) shift; break ;;
		*) echo "sandbox_run: unknown option $1" >&2; return 126 ;;
		esac
	done
	# (Root without CAP_SYS_RESOURCE, in a container, cannot raise it.)
	[ "$(ulimit -H -l)" = unlimited ] ||
		[ "$(ulimit -H -l)" -ge $((memlock >> 10)) ] ||
		memlock=$(($(ulimit -H -l) << 10))
	options=$(mktemp "${TMPDIR:-/tmp}/sandbox-options.XXXXXX") || return 126
	if [ "$(id -u)" -eq 0 ]; then
		# One sandbox at a time on this host: they share a user, its
		# process limit and sandbox_reap().
		mkdir -p "${SANDBOX_LOCK%/*}" &&
			exec {lock}>>"$SANDBOX_LOCK" && flock -w 1800 "$lock" ||
			{ echo "sandbox: cannot lock $SANDBOX_LOCK" >&2;
			  rm -f "$options"; return 126; }
		cg=$(sandbox_cgroup)
		drop=(setpriv --reuid="$SANDBOX_UID" --regid="$SANDBOX_UID"
			--clear-groups --inh-caps=-all --bounding-set=-all --)
	else
		cg= user=(--unshare-user)
	fi
	(
		# Only stdin, stdout and stderr go in: not the receiver's
		# FIFO, not the grader's own descriptors.
		for fd in /proc/$BASHPID/fd/*; do
			fd=${fd##*/}
			[ "$fd" -gt 2 ] && exec {fd}>&-
		done
		[ -z "$cg" ] || echo "$BASHPID" >"$cg/cgroup.procs" || exit 126
		umask 022	# (the directories bwrap makes for the binds)
		sandbox_system_binds
		# bwrap's options go in through a file (--args), so that the
		# sandbox's /proc/1/cmdline, bwrap's own, names none of the
		# grader's paths; bwrap closes it.
		printf '%s\0' --die-with-parent --new-session "${user[@]}" \
			--unshare-pid --unshare-ipc --unshare-uts \
			--unshare-cgroup-try --hostname lab3-sandbox \
			--clearenv --setenv PATH /usr/bin:/bin \
			--setenv HOME /tmp --setenv TMPDIR /tmp \
			--setenv LC_ALL C \
			"${SYSTEM[@]}" \
			--ro-bind /sys /sys --proc /proc --dev /dev \
			--dev-bind-try /dev/infiniband /dev/infiniband \
			--size "$tmp" --perms 1777 --tmpfs /tmp \
			"${binds[@]}" --chdir "$dir" >"$options" &&
			exec 3<"$options" || exit 126
		rm -f "$options"
		# (timeout SIGKILLs bwrap; its child, the namespace's first
		# process, dies with it, and so does every process in it.
		# That child stays root: a parent-death signal does not
		# outlive a change of user, so CMD is not the first.)
		exec timeout --foreground -s KILL "$limit" choom -n 1000 -- \
			prlimit --nproc="$SANDBOX_NPROC" \
			--fsize="$SANDBOX_FSIZE" --nofile="$SANDBOX_NOFILE" \
			--memlock="$memlock" --core=0 -- \
			bwrap --args 3 -- "${drop[@]}" "$@"
	)
	status=$?
	rm -f "$options"
	if [ -n "$cg" ]; then
		sandbox_cgroup_end "$cg"
	elif [ "$(id -u)" -eq 0 ]; then
		sandbox_reap
	fi
	[ -z "$lock" ] || exec {lock}>&-
	return "$status"
}

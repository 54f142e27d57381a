# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# sandbox.sh: run a submission's code, its build or the sender it built,
# where it can reach nothing of the grader's.  Sourced by
# scripts/lib/grade-bed.sh, which runs as root (in the bed's VM, or on a
# host with its own rxe).
#
# What the code sees, an allow-list: the toolchain and what it runs on,
# read-only; nothing else of the system.
#   - /usr/bin: only the programs of SANDBOX_PROGRAMS (the compiler's
#     driver, as, ld, make, pkg-config, sh and bash, the coreutils a
#     kit's Makefile and a test's shell use), each bound alone at its
#     name, symbolic links resolved; /bin is a link to it.  No other
#     program of /usr/bin, none of /usr/sbin, /usr/local (all of it: the
#     reference sender, installed on the lab host, is in /usr/local/bin),
#     /opt, /home, /root, /srv, /var.
#   - /usr/include (the C headers, rdma/, infiniband/, openssl/), the
#     multiarch library folders (/usr/lib/*-linux-gnu*: libc, librdmacm,
#     libibverbs and its providers, libcrypto, what they need, the .pc
#     files), /usr/lib/gcc (cc1, crt files), /usr/lib/bfd-plugins,
#     /usr/lib64 (the loader's link) and /usr/share/pkgconfig, whole.
#     (They hold libraries; a Lab 3 program installed there would be a
#     library folder misused, and the allow-list of /usr/bin is what a
#     `sender` on PATH would come through.)
#   - a few files of /etc that the loader, libibverbs and name resolution
#     read; /sys read-only (but for the RDMA devices' counters, which
#     count every run's packets: empty), the RDMA devices, a /proc and
#     /dev of its own,
#     an empty /tmp of SANDBOX_TMP bytes (its HOME), and the paths the
#     caller binds in.
# Not the checkout, not the kit's grader, not the grading secret, not the
# receiver's output, not other submissions or results, not the grader's
# processes or environment (but libcrypto's CPU-feature mask,
# OPENSSL_ia32cap, when the grader has one: it only takes features away).  It runs as a user of its own (SANDBOX_UID,
# in no group, no capabilities, no new privileges), in its own mount,
# PID, IPC and UTS namespaces.  (A grader
# that is not root, a student's `make check` on a device of their own,
# cannot give it a user of its own: there it runs as the grader's user,
# mapped in a user namespace of its own, which still hides the grader's
# processes and files.  An instructor grades as root.)  Its
# network namespace is the host's: rdma_cm finds the RDMA device's
# addresses there.
#
# No state crosses runs.  Every writable path is made fresh for one run
# (/tmp, /dev and its /dev/shm, the IPC namespace's queues and
# segments) and the caller's -w binds are its own choice.  The kernel's
# keyrings would outlive a run: a user's keyring is kept per uid, and
# every run has the same uid (a fresh user namespace would not help
# where a session keyring is inherited), so a seccomp filter
# (sandbox_seccomp) fails add_key, request_key and keyctl with ENOSYS,
# refuses every way to a user namespace of its own and every IPv4 and
# IPv6 socket (a TCP connection's TIME_WAIT outlives its run), and kills
# a process that calls the kernel through another ABI (i386's int 0x80,
# x32) whose numbers the filter does not know.  The network namespace is
# the host's all the same (rxe in Debian 12's kernel 6.1 does not work
# across namespaces: tried, a veth pair into one, the REQ never came):
# what the kernel's RDMA netlink says (rdma statistic) is not hidden.
#
# Locked memory: -l sets it for one run (default SANDBOX_MEMLOCK); the
# grader gives each check what its receiver's windows need.
#
# Why bubblewrap: it is the sandbox Flatpak and others are built on,
# kept by the same people, and one command line sets up every namespace
# and exactly the mounts listed, with no daemon (the bed's VM has no
# systemd for a transient unit).  util-linux's setpriv drops it to the
# sandbox's user, and the shell's own ulimit and oom_score_adj set its
# limits.  Memory and
# processes are also capped by a cgroup of its own when the grader can
# make one (always in the bed's VM); otherwise the kernel's OOM killer
# takes the sandbox first (oom_score_adj 1000).
#
#   sandbox_check              succeed if sandbox_run can work here; else
#                              print why, one line on stderr
#   sandbox_run [-r SRC:DST]... [-w SRC:DST]... [-C DIR] [-t SECONDS]
#               [-s TMP_BYTES] [-l MEMLOCK_BYTES] -- CMD [ARG...]
#                              run CMD in the sandbox: -r binds SRC
#                              read-only at DST, -w read-write; -C is its
#                              working directory (default /tmp); -t
#                              SIGKILLs all of it after SECONDS (exit
#                              status 137; default 600); -s sizes its
#                              /tmp (default SANDBOX_TMP); -l its
#                              locked memory (default SANDBOX_MEMLOCK,
#                              never over the caller's hard limit).  Its
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
SANDBOX_MEMLOCK=$((64 << 20))	# for its RDMA registrations, unless -l
# The programs of /usr/bin it sees (those this host has): setpriv (the
# sandbox's own way in: it drops to SANDBOX_UID there), the toolchain,
# the shells, and the coreutils and tools a kit's Makefile and a shell
# script use.
SANDBOX_PROGRAMS="sh bash dash cc gcc cpp c99 as ld ld.bfd ar ranlib nm
	strip objdump readelf make pkg-config pkgconf cat cp mv rm ln mkdir
	rmdir ls chmod touch test [ true false echo printf env id head tail
	wc cut tr sort uniq sed grep awk mawk df du stat basename dirname
	expr sleep uname readlink realpath mktemp xargs find cmp diff od
	sha256sum tee date nproc setpriv"
SANDBOX_CGROUP_ROOT=/sys/fs/cgroup
SANDBOX_LOCK=/run/lock/lab3-sandbox.lock	# one sandbox at a time
unset SANDBOX_SYSTEM	# (sandbox_system_binds(): made here, once a shell)

# sandbox_check: see above.
sandbox_check() {
	local tool why
	for tool in bwrap setpriv timeout flock pkill; do
		command -v "$tool" >/dev/null || {
			echo "$tool is not installed (scripts/install-deps)" >&2
			return 1
		}
	done
	if ! sandbox_seccomp >/dev/null; then
		echo "no seccomp filter for $HOSTTYPE: the sandbox knows the" \
			"keyring calls' numbers of x86_64 and aarch64 only" >&2
		return 1
	fi
	if [ "$EUID" -eq 0 ] && getent passwd "$SANDBOX_UID" >/dev/null; then
		echo "uid $SANDBOX_UID, the sandbox's, belongs to" \
			"$(getent passwd "$SANDBOX_UID" | cut -d: -f1) here:" \
			"set GRADE_SANDBOX_UID to an unused one" >&2
		return 1
	fi
	if ! why=$(sandbox_run -- /bin/true 2>&1); then
		echo "bubblewrap cannot make a sandbox here as uid $EUID" \
			"($(head -n 1 <<<"$why")): run the grader as root" >&2
		return 1
	fi
}

# sandbox_cgroup: make a cgroup for one run, capped in memory and
# processes; print its path, or nothing when none can be made here.
sandbox_cgroup() {
	local cg mem=0 ctl controls key value
	# (cgroup2 is mounted here only where nothing is: the bed's VM.  A
	# host's own hierarchy, v1 or v2, is never covered.)
	if ! sandbox_mounted "$SANDBOX_CGROUP_ROOT"; then
		mount -t cgroup2 cgroup2 "$SANDBOX_CGROUP_ROOT" 2>/dev/null ||
			return 0
	fi
	[ -e "$SANDBOX_CGROUP_ROOT/cgroup.controllers" ] || return 0
	read -r controls <"$SANDBOX_CGROUP_ROOT/cgroup.subtree_control"
	for ctl in memory pids; do
		[[ " $controls " == *" $ctl "* ]] ||
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
	while read -r key value _; do
		[ "$key" = MemTotal: ] && mem=$((value * 768)) && break
	done </proc/meminfo
	[ "$mem" -le 1073741824 ] || mem=1073741824
	[ "$mem" -gt 0 ] || { rmdir "$cg"; return 0; }	# (no MemTotal?)
	{ echo 0 >"$cg/memory.swap.max"; } 2>/dev/null	# (no swap: no file)
	if echo "$mem" >"$cg/memory.max" &&
		echo "$SANDBOX_NPROC" >"$cg/pids.max"; then
		echo "$cg"
	else
		rmdir "$cg" 2>/dev/null
	fi
}

# sandbox_mounted DIR: whether something is mounted at DIR (/proc's
# mountinfo, read by the shell: under TCG each process costs up to 0.2 s,
# and a run of the sandbox starts a handful of them at most).  DIR must
# hold no space, tab or backslash: mountinfo writes those escaped.
sandbox_mounted() {
	local _id _parent _dev _root point _rest
	while read -r _id _parent _dev _root point _rest; do
		[ "$point" = "$1" ] && return 0
	done </proc/self/mountinfo
	return 1
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

# sandbox_system_binds: bwrap's arguments for the allow-list above, into
# the array SANDBOX_SYSTEM.  (An array, not a pipe: the bed's /dev has no
# /dev/fd for a process substitution.)
sandbox_system_binds() {
	local d p
	SANDBOX_SYSTEM=(--perms 0755 --dir /usr --perms 0755 --dir /usr/bin
		--perms 0755 --dir /usr/lib)
	# (bwrap binds what a link names, as the kernel's bind mount does:
	# /usr/bin/cc the compiler itself, no link to follow inside.  No
	# readlink here: under TCG each process costs up to 0.2 s.)
	for p in $SANDBOX_PROGRAMS; do
		[ -e "/usr/bin/$p" ] &&
			SANDBOX_SYSTEM+=(--ro-bind "/usr/bin/$p" "/usr/bin/$p")
	done
	for d in /usr/include /usr/lib/*-linux-gnu* /usr/lib/gcc \
		/usr/lib/bfd-plugins /usr/lib64 /usr/share/pkgconfig; do
		[ -d "$d" ] && SANDBOX_SYSTEM+=(--ro-bind "$d" "$d")
	done
	# /bin, /lib, /lib64 as this host has them: links into /usr (merged
	# /usr), or else the folder's own allow-list of the same kind.
	for d in bin lib lib32 lib64 libx32; do
		if [ -L "/$d" ]; then
			SANDBOX_SYSTEM+=(--symlink "$(readlink "/$d")" "/$d")
		elif [ "$d" = bin ] && [ -d /bin ]; then
			SANDBOX_SYSTEM+=(--perms 0755 --dir /bin)
			for p in $SANDBOX_PROGRAMS; do
				[ -e "/bin/$p" ] &&
					SANDBOX_SYSTEM+=(--ro-bind "/bin/$p" "/bin/$p")
			done
		elif [ -d "/$d" ]; then
			SANDBOX_SYSTEM+=(--ro-bind "/$d" "/$d")
		fi
	done
	# The loader's cache, libibverbs' providers, and name resolution for
	# a numeric address.  (bwrap would make /etc mode 0700, as root: the
	# sandbox's user could not enter it.)
	SANDBOX_SYSTEM+=(--perms 0755 --dir /etc)
	for d in ld.so.cache ld.so.conf ld.so.conf.d libibverbs.d rdma \
		hosts host.conf nsswitch.conf gai.conf localtime; do
		SANDBOX_SYSTEM+=(--ro-bind-try "/etc/$d" "/etc/$d")
	done
}

# sandbox_seccomp: the classic BPF program that bwrap's --seccomp takes,
# on stdout:
#   - the keyring calls (add_key, request_key, keyctl) fail with ENOSYS;
#   - no user namespace: clone() and unshare() with CLONE_NEWUSER, and
#     setns(), fail with EPERM, and clone3() (whose flags sit in memory
#     a filter cannot read) with ENOSYS, so that the C library falls back
#     to clone() (a user namespace's capabilities would open the kernel's
#     code for every other namespace to the submission);
#   - no IPv4 or IPv6 socket: socket(AF_INET or AF_INET6) fails with
#     EACCES.  A sender needs none (rdma_cm and libibverbs use the RDMA
#     device, netlink and a Unix socket), and a run that made one would
#     leave state that the next run could count (a TCP connection stays
#     in TIME_WAIT for a minute, in /proc/net/tcp);
#   - every other call of this machine's own ABI goes through, and a call
#     through another ABI (x32's numbers, i386's int 0x80) kills the
#     process.
# Each instruction is struct sock_filter { u16 code; u8 jt, jf; u32 k; }
# in this machine's (little-endian) byte order; jt and jf count the
# instructions skipped.  Fails, printing nothing, on a machine whose
# numbers it does not know.
sandbox_seccomp() {
	local arch add_key request_key keyctl clone unshare setns socket
	local clone3=435
	case $HOSTTYPE in
	x86_64) arch=0xc000003e add_key=248 request_key=249 keyctl=250
		clone=56 unshare=272 setns=308 socket=41 ;;
	aarch64) arch=0xc00000b7 add_key=217 request_key=218 keyctl=219
		clone=220 unshare=97 setns=268 socket=198 ;;
	*) return 1 ;;
	esac
	local ld=0x20 jeq=0x15 jge=0x35 jset=0x45 ret=0x06	# BPF_LD|W|ABS, ...
	local newuser=0x10000000 inet=2 inet6=10	# CLONE_NEWUSER, AF_INET*
	sandbox_bpf $ld 0 0 4			# 0: A = seccomp_data.arch
	sandbox_bpf $jeq 0 21 $arch		# 1: another ABI: to 23
	sandbox_bpf $ld 0 0 0			# 2: A = seccomp_data.nr
	sandbox_bpf $jge 19 0 0x40000000	# 3: x32's numbers: to 23
	sandbox_bpf $jeq 17 0 $add_key		# 4: to 22
	sandbox_bpf $jeq 16 0 $request_key	# 5: to 22
	sandbox_bpf $jeq 15 0 $keyctl		# 6: to 22
	sandbox_bpf $jeq 14 0 $clone3		# 7: to 22
	sandbox_bpf $jeq 11 0 $setns		# 8: to 20
	sandbox_bpf $jeq 3 0 $unshare		# 9: to 13
	sandbox_bpf $jeq 2 0 $clone		# 10: to 13
	sandbox_bpf $jeq 4 0 $socket		# 11: to 16
	sandbox_bpf $ret 0 0 0x7fff0000		# 12: SECCOMP_RET_ALLOW
	sandbox_bpf $ld 0 0 16			# 13: A = args[0]'s low word: flags
	sandbox_bpf $jset 5 0 $newuser		# 14: CLONE_NEWUSER: to 20
	sandbox_bpf $ret 0 0 0x7fff0000		# 15: SECCOMP_RET_ALLOW
	sandbox_bpf $ld 0 0 16			# 16: A = args[0]'s low word: domain
	sandbox_bpf $jeq 3 0 $inet		# 17: to 21
	sandbox_bpf $jeq 2 0 $inet6		# 18: to 21
	sandbox_bpf $ret 0 0 0x7fff0000		# 19: SECCOMP_RET_ALLOW
	sandbox_bpf $ret 0 0 $((0x50000 | 1))	# 20: SECCOMP_RET_ERRNO, EPERM
	sandbox_bpf $ret 0 0 $((0x50000 | 13))	# 21: SECCOMP_RET_ERRNO, EACCES
	sandbox_bpf $ret 0 0 $((0x50000 | 38))	# 22: SECCOMP_RET_ERRNO, ENOSYS
	sandbox_bpf $ret 0 0 0x80000000		# 23: SECCOMP_RET_KILL_PROCESS
}

# sandbox_bpf CODE JT JF K: one BPF instruction, its 8 bytes.  (Built-ins
# only: no process.)
sandbox_bpf() {
	local c=$(($1)) k=$(($4)) bytes
	printf -v bytes '\\x%02x' $((c & 255)) $((c >> 8)) "$2" "$3" \
		$((k & 255)) $((k >> 8 & 255)) $((k >> 16 & 255)) $((k >> 24 & 255))
	# shellcheck disable=SC2059 # the format is the bytes
	printf "$bytes"
}

# sandbox_run: see above.
sandbox_run() {
	local binds=() dir=/tmp limit=600 memlock=$SANDBOX_MEMLOCK cg status
	local tmp=$SANDBOX_TMP lock= hard above
	local user=() drop=() env=() options scratch
	while [ $# -gt 0 ]; do
		case $1 in
		-r | -w)
			# (split at the last ':': SRC may hold one, DST not;
			# the directory above DST made 0755, as for /etc)
			above=${2##*:} above=${above%/*}
			binds+=(--perms 0755 --dir "${above:-/}")
			if [ "$1" = -r ]; then
				binds+=(--ro-bind "${2%:*}" "${2##*:}")
			else
				binds+=(--bind "${2%:*}" "${2##*:}")
			fi
			shift 2 ;;
		-C) dir=$2; shift 2 ;;
		-s) tmp=$2; shift 2 ;;
		-l) memlock=$2; shift 2 ;;
		-t) limit=$2; shift 2 ;;
		--) shift; break ;;
		*) echo "sandbox_run: unknown option $1" >&2; return 126 ;;
		esac
	done
	# (bwrap's options and its filter, in a folder of this run's own.)
	scratch=$(mktemp -d "${TMPDIR:-/tmp}/sandbox-options.XXXXXX") ||
		return 126
	options=$scratch/options
	[ -n "${SANDBOX_SYSTEM+set}" ] || sandbox_system_binds	# (once a shell)
	if ! sandbox_seccomp >"$options.bpf"; then
		echo "sandbox: no seccomp filter for $HOSTTYPE here" >&2
		rm -rf "$scratch"
		return 126
	fi
	if [ "$EUID" -eq 0 ]; then
		# One sandbox at a time on this host: they share a user, its
		# process limit and sandbox_reap().
		{ [ -d "${SANDBOX_LOCK%/*}" ] || mkdir -p "${SANDBOX_LOCK%/*}"; } &&
			exec {lock}>>"$SANDBOX_LOCK" && flock -w 1800 "$lock" ||
			{ echo "sandbox: cannot lock $SANDBOX_LOCK" >&2;
			  rm -rf "$scratch"; return 126; }
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
		# Locked memory: raised to MEMLOCK here if it must be (root
		# can; root without CAP_SYS_RESOURCE, in a container, cannot,
		# and gives its own hard limit).  (Until issue 39 it was capped
		# at the caller's hard limit, the kernel's 8 MiB in the bed's
		# VM: every run had 8 MiB, whatever SANDBOX_MEMLOCK said.)
		if ! ulimit -l $((memlock >> 10)) 2>/dev/null; then
			hard=$(ulimit -H -l)
			[ "$hard" = unlimited ] ||
				[ "$hard" -ge $((memlock >> 10)) ] ||
				memlock=$((hard << 10))
		fi
		umask 022	# (the directories bwrap makes for the binds)
		# The environment is PATH, HOME, TMPDIR and LC_ALL, and
		# libcrypto's CPU-feature mask when the caller has one: it
		# can only take features away (scripts/grade sets it in the
		# bed, whose emulator runs AVX slowly).
		env=()
		[ -z "${OPENSSL_ia32cap+set}" ] ||
			env=(--setenv OPENSSL_ia32cap "$OPENSSL_ia32cap")
		# The RDMA devices' counters, which earlier runs' packets
		# moved: an empty folder in their place.
		COUNTERS=()
		for counters in /sys/class/infiniband/*/hw_counters \
			/sys/class/infiniband/*/ports/*/hw_counters; do
			[ -d "$counters" ] && COUNTERS+=(--tmpfs "$counters")
		done
		# bwrap's options go in through a file (--args), so that the
		# sandbox's /proc/1/cmdline, bwrap's own, names none of the
		# grader's paths, and the seccomp filter through another
		# (--seccomp); bwrap closes both.
		printf '%s\0' --die-with-parent --new-session "${user[@]}" \
			--unshare-pid --unshare-ipc --unshare-uts \
			--unshare-cgroup-try --hostname lab3-sandbox \
			--clearenv --setenv PATH /usr/bin:/bin \
			--setenv HOME /tmp --setenv TMPDIR /tmp \
			--setenv LC_ALL C "${env[@]}" \
			"${SANDBOX_SYSTEM[@]}" \
			--ro-bind /sys /sys "${COUNTERS[@]}" \
			--proc /proc --dev /dev \
			--dev-bind-try /dev/infiniband /dev/infiniband \
			--size "$tmp" --perms 1777 --tmpfs /tmp \
			"${binds[@]}" --chdir "$dir" --seccomp 4 >"$options" &&
			exec 3<"$options" 4<"$options.bpf" || exit 126
		# Its limits, soft and hard (ulimit outside POSIX mode: -f and
		# -l in KiB), and the OOM killer's first choice.  (timeout, a
		# root process outside the sandbox, has them too: root is
		# exempt from the process count, and the OOM killer takes the
		# largest of the processes at 1000 first, never so small a
		# one before the sandbox's own; and if it did, bwrap would
		# die with it.)
		set +o posix
		ulimit -u "$SANDBOX_NPROC" -f $((SANDBOX_FSIZE >> 10)) \
			-n "$SANDBOX_NOFILE" -l $((memlock >> 10)) -c 0 &&
			echo 1000 >/proc/self/oom_score_adj || exit 126
		# (timeout SIGKILLs bwrap; its child, the namespace's first
		# process, dies with it, and so does every process in it.
		# That child stays root: a parent-death signal does not
		# outlive a change of user, so CMD is not the first.)
		exec timeout --foreground -s KILL "$limit" \
			bwrap --args 3 -- "${drop[@]}" "$@"
	)
	status=$?
	rm -rf "$scratch"
	if [ -n "$cg" ]; then
		sandbox_cgroup_end "$cg"
	elif [ "$EUID" -eq 0 ]; then
		sandbox_reap
	fi
	[ -z "$lock" ] || exec {lock}>&-
	return "$status"
}

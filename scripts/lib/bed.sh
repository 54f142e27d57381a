# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The Soft-RoCE test bed's virtual machines, shared by scripts/rxe-run and
# scripts/rxe-pair.  Source it from bash after setting BED_PROG.
#
# A bed VM is Debian's stock amd64 kernel under QEMU's TCG accelerator, with a
# busybox initramfs (scripts/lib/guest-init) that mounts the host's root
# filesystem read-only over virtio-9p, brings up an RDMA device and runs one
# command in a chroot of it.  The kernel is fetched with `apt-get download`
# and unpacked into a cache directory, never installed.  Kernel and initramfs
# are rebuilt only when their inputs change.
#
# The device is Soft-RoCE (rdma_rxe, device rxe0) or, with RXE_PROVIDER=siw,
# Soft-iWARP (siw, device siw0), never both: a VM has one provider.  Debian
# does not ship siw.ko (CONFIG_RDMA_SIW is off), so the bed builds it once
# per kernel from Debian's own linux-source and linux-headers packages
# (fetched with `apt-get download`, unpacked, never installed) and caches it
# next to that kernel.
#
# Environment (all optional):
#   RXE_PROVIDER    rxe (default) or siw: the soft RDMA provider of the VMs
#   RXE_SAVE        a directory that receives, when the run ends, the files
#                   the commands left in $RXE_SHARE/save
#   RXE_TIMEOUT     seconds the whole run may take (default 600)
#   RXE_VM_MEM      memory of each VM (default 2G)
#   RXE_VM_CPUS     virtual CPUs of each VM (default 2)
#   RXE_VM_CPU      QEMU's CPU model for each VM (default max: every
#                   feature TCG emulates; a named model, such as
#                   Westmere, leaves out AVX, which TCG runs slowly)
#   RXE_BED_CACHE   cache directory (default ~/.cache/rdma-lab3-bed)
#   RXE_KERNEL_PKG  kernel package to use, or a series' meta-package such as
#                   linux-image-6.12-amd64 (default: linux-image-amd64)
#   RXE_KERNEL_DIR  a kernel and initramfs prepared already (vmlinuz and
#                   initramfs-PROVIDER-*.cpio, as the Gradescope
#                   autograder carries them): used as they are, no apt
#   RXE_VIEW        the grader's view (scripts/grade sets it): the VMs
#                   see not the host's /, but its /usr, a copy of the few
#                   files of /etc that the programs read (BED_VIEW_ETC),
#                   and the directories this colon-separated list names
#                   (absolute paths), each read-only: no home, no
#                   /etc/shadow, no secret of the host's, whatever a
#                   submission that reaches root in the VM tries

BED_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
BED_CACHE=${RXE_BED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdma-lab3-bed}
BED_TIMEOUT=${RXE_TIMEOUT:-600}
BED_MEM=${RXE_VM_MEM:-2G}
BED_CPUS=${RXE_VM_CPUS:-2}
BED_CPU=${RXE_VM_CPU:-max}

# Exit statuses of the bed itself, as timeout(1) and env(1) use them.
BED_EXIT_TIMEOUT=124
BED_EXIT_FAILURE=125

BED_PROVIDER=${RXE_PROVIDER:-rxe}

# The modules the guest loads; modprobe adds their dependencies in order.
BED_MODULES="virtio_pci virtio_console virtio_net 9pnet_virtio 9p \
crc32_generic rdma_rxe rdma_ucm dummy"
# What siw.ko needs from the kernel package besides those: libcrc32c, and
# crc32c_generic for the "crc32c" algorithm that libcrc32c asks for (a
# soft dependency, which modprobe --show-depends does not follow).
BED_SIW_MODULES="crc32c_generic libcrc32c"

bed_die() {
	echo "$BED_PROG: $*" >&2
	exit "$BED_EXIT_FAILURE"
}

# bed_kernel_package: print the name of the kernel package to use:
# RXE_KERNEL_PKG, or the kernel it stands for when it names a series'
# meta-package (linux-image-6.12-amd64); by default, the kernel
# linux-image-amd64 stands for (nothing when apt cannot tell).
bed_kernel_package() {
	local kernel
	kernel=$(apt-cache depends "${RXE_KERNEL_PKG:-linux-image-amd64}" 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n 1)
	kernel=${kernel:-${RXE_KERNEL_PKG:-}}
	[ -z "$kernel" ] || echo "$kernel"
}

# bed_candidate PACKAGE: print the version apt would fetch of PACKAGE, or
# nothing.
bed_candidate() {
	[ -n "$1" ] && apt-cache policy "$1" 2>/dev/null |
		sed -n 's/^ *Candidate: //p' | grep -vx '(none)'
}

# bed_copy_modules ROOT KVER DIR LIST MODULE...: copy each MODULE of the
# kernel KVER unpacked in ROOT, with the modules it depends on, into DIR,
# and append their file names, in load order, to DIR/LIST.  A module that
# DIR/order lists already is left out.
bed_copy_modules() {
	local root=$1 kver=$2 dir=$3 list=$4 module path
	shift 4
	# -C /dev/null: the host's modprobe.d must not change what the guest loads.
	for module in "$@"; do
		modprobe -C /dev/null -d "$root" -S "$kver" --show-depends "$module"
	done | awk -v order="$dir/order" '
		BEGIN { while ((getline line < order) > 0) { split(line, f, " "); seen[f[1]] = 1 } }
		$1 == "insmod" { n = split($2, p, "/"); if (!seen[p[n]]++) print $2 }' |
		while read -r path; do
			cp "$path" "$dir/"
			module=$(basename "$path")
			# No dummy0: the guest names its own dummy device.
			[ "$module" = dummy.ko ] && module="$module numdummies=0"
			echo "$module" >>"$dir/$list"
		done
}

# bed_fetch_kernel PKG VERSION DIR: download PKG, unpack its kernel image into
# DIR and copy the modules the guest needs, in load order, into DIR/modules
# (the list in DIR/modules/order; what siw needs besides, in order.siw).
bed_fetch_kernel() {
	local pkg=$1 version=$2 dir=$3 tmp deb kver module
	local -a apt_opts=(-q)

	tmp=$(mktemp -d "$BED_CACHE/fetch.XXXXXX") || return 1
	[ "$(id -u)" -eq 0 ] && apt_opts+=(-o APT::Sandbox::User=root)
	echo "$BED_PROG: fetching $pkg $version (once; cached in $BED_CACHE)" >&2
	if ! (cd "$tmp" && apt-get "${apt_opts[@]}" download "$pkg=$version" \
		>/dev/null); then
		rm -rf "$tmp"
		echo "$BED_PROG: apt-get download $pkg=$version failed" >&2
		return 1
	fi
	deb=$(echo "$tmp"/*.deb)
	mkdir -p "$tmp/root" "$dir.new/modules"
	dpkg-deb --fsys-tarfile "$deb" |
		tar -x -C "$tmp/root" --wildcards './boot/vmlinuz-*' './lib/modules/*'
	kver=$(basename "$tmp"/root/lib/modules/*)
	cp "$tmp/root/boot/vmlinuz-$kver" "$dir.new/vmlinuz"
	depmod -b "$tmp/root" "$kver"
	: >"$dir.new/modules/order"
	bed_copy_modules "$tmp/root" "$kver" "$dir.new/modules" order $BED_MODULES
	bed_copy_modules "$tmp/root" "$kver" "$dir.new/modules" order.siw \
		$BED_SIW_MODULES
	echo "$kver" >"$dir.new/kernel-version"
	rm -rf "$tmp" "$dir"
	mv "$dir.new" "$dir"
}

# bed_siw_fail REASON: for bed_build_siw: say why, remove its scratch
# directory, fail.
bed_siw_fail() {
	echo "$1 (log: $log)"
	rm -rf "$tmp"
	return 1
}

# bed_build_siw KDIR VERSION: build siw.ko for the kernel in KDIR (from the
# package version VERSION) into KDIR/siw.ko, from the same version of
# Debian's linux-source-X.Y and linux-headers packages.  Only siw's own
# directory of the source is unpacked.  On failure, print the reason on
# stdout and keep the build's output in KDIR/siw-build.log.
bed_build_siw() {
	local kdir=$1 version=$2 kver series tmp log headers dep src siw
	local -a apt_opts=(-q) debs

	kver=$(cat "$kdir/kernel-version")
	series=$(echo "$kver" | sed -n 's/^\([0-9]*\.[0-9]*\)\..*/\1/p')
	log=$kdir/siw-build.log
	tmp=$(mktemp -d "$BED_CACHE/siw.XXXXXX") || return 1
	[ "$(id -u)" -eq 0 ] && apt_opts+=(-o APT::Sandbox::User=root)
	echo "$BED_PROG: building siw.ko for $kver from linux-source-$series $version (once; cached in $kdir)" >&2

	# The headers package names the others it needs: the common headers
	# and the kernel build tools.
	if ! (cd "$tmp" && apt-get "${apt_opts[@]}" download \
		"linux-source-$series=$version" "linux-headers-$kver=$version") \
		>"$log" 2>&1; then
		bed_siw_fail "apt-get download linux-source-$series=$version linux-headers-$kver=$version failed"
		return 1
	fi
	headers=$(echo "$tmp"/linux-headers-*.deb)
	# NAME [OP VERSION]: the common headers must be this very version;
	# the build tools may be newer ("linux-kbuild-6.1 (>= 6.1.170-3)") or
	# have no version ("linux-kbuild-6.12.117+deb12"): then the newest.
	while read -r dep op want; do
		[ "$op" != "=" ] && ! apt-cache madison "$dep" |
			awk -F'|' -v v="$want" '{ gsub(/ /, "", $2) } $2 == v { f = 1 } END { exit !f }' &&
			want=$(apt-cache policy "$dep" | sed -n 's/^ *Candidate: //p')
		(cd "$tmp" && apt-get "${apt_opts[@]}" download "$dep=$want") \
			>>"$log" 2>&1 ||
			{ bed_siw_fail "apt-get download $dep=$want failed"; return 1; }
	done < <(dpkg-deb -f "$headers" Depends | tr ',' '\n' |
		sed -n 's/^ *\(linux-headers-[^ ]*-common\|linux-kbuild-[^ ]*\)\( (\([<>=]*\) \([^)]*\))\)\{0,1\} *$/\1 \3 \4/p')
	debs=("$tmp"/*.deb)
	mkdir "$tmp/root"
	for dep in "${debs[@]}"; do
		dpkg-deb -x "$dep" "$tmp/root" >>"$log" 2>&1 ||
			{ bed_siw_fail "cannot unpack $(basename "$dep")"; return 1; }
	done
	src=linux-source-$series/drivers/infiniband/sw/siw
	tar -xJf "$tmp/root/usr/src/linux-source-$series.tar.xz" -C "$tmp" \
		--wildcards "$src/*" >>"$log" 2>&1 ||
		{ bed_siw_fail "no $src in linux-source-$series"; return 1; }
	# The headers' Makefile includes the common headers' by absolute
	# path, which is under $tmp/root here, not under /usr/src.
	sed -i "s|^include /usr/src/|include $tmp/root/usr/src/|" \
		"$tmp/root/usr/src/linux-headers-$kver/Makefile"
	siw=$tmp/$src
	# No BTF type information for the module: it would need pahole and
	# the kernel's vmlinux, and nothing in the bed reads it.
	make -C "$tmp/root/usr/src/linux-headers-$kver" M="$siw" \
		CONFIG_RDMA_SIW=m CONFIG_DEBUG_INFO_BTF_MODULES= modules \
		>>"$log" 2>&1 ||
		{ bed_siw_fail "make of siw.ko failed"; return 1; }
	# Without its debugging sections the module is a tenth of the size,
	# and so is the initramfs that carries it.
	strip --strip-debug -o "$kdir/siw.ko.new" "$siw/siw.ko" \
		>>"$log" 2>&1 && mv "$kdir/siw.ko.new" "$kdir/siw.ko" ||
		{ bed_siw_fail "cannot strip siw.ko into $kdir"; return 1; }
	rm -rf "$tmp"
}

# bed_module_order KDIR: print the modules the provider's guest loads, in
# load order, one per line with its parameters: Soft-iWARP's guest has
# siw.ko and what it needs instead of rdma_rxe.ko.
bed_module_order() {
	local kdir=$1
	if [ "$BED_PROVIDER" = siw ]; then
		grep -v '^rdma_rxe\.ko' "$kdir/modules/order"
		cat "$kdir/modules/order.siw"
		echo siw.ko
	else
		cat "$kdir/modules/order"
	fi
}

# bed_build_initramfs KDIR OUT: write the initramfs (an uncompressed newc
# cpio archive, which the kernel unpacks faster than a compressed one).
bed_build_initramfs() {
	local kdir=$1 out=$2 stage module params

	stage=$(mktemp -d "$BED_CACHE/initramfs.XXXXXX") || return 1
	mkdir -p "$stage"/{bin,dev,proc,sys,root,share,hosttmp,modules}
	cp /bin/busybox "$stage/bin/busybox"
	cp "$BED_DIR/scripts/lib/guest-init" "$stage/init"
	chmod 755 "$stage/init"
	bed_module_order "$kdir" >"$stage/modules/order"
	while read -r module params; do
		if [ "$module" = siw.ko ]; then
			cp "$kdir/siw.ko" "$stage/modules/"
		else
			cp "$kdir/modules/$module" "$stage/modules/"
		fi || {
			rm -rf "$stage"
			return 1
		}
	done <"$stage/modules/order"
	(cd "$stage" && find . -print0 | cpio --null -o -H newc --quiet) \
		>"$out.new" || {
		rm -rf "$stage"
		return 1
	}
	rm -rf "$stage"
	mv "$out.new" "$out"
}

# bed_prepare: make sure a kernel and an initramfs are in the cache, and set
# BED_KERNEL and BED_INITRD to them (or to RXE_KERNEL_DIR's).
bed_prepare() {
	local pkg version kdir key why
	local -a inputs

	case $BED_PROVIDER in
	rxe | siw) ;;
	*) bed_die "RXE_PROVIDER must be rxe or siw, not '$BED_PROVIDER'" ;;
	esac
	if [ -n "${RXE_KERNEL_DIR:-}" ]; then
		BED_KERNEL=$RXE_KERNEL_DIR/vmlinuz
		BED_INITRD=$(ls "$RXE_KERNEL_DIR/initramfs-$BED_PROVIDER-"*.cpio 2>/dev/null | head -n 1)
		[ -f "$BED_KERNEL" ] && [ -n "$BED_INITRD" ] ||
			bed_die "RXE_KERNEL_DIR=$RXE_KERNEL_DIR holds no vmlinuz and initramfs-$BED_PROVIDER-*.cpio"
		command -v qemu-system-x86_64 >/dev/null ||
			bed_die "qemu-system-x86_64 not found; run scripts/install-deps"
		return
	fi
	for tool in qemu-system-x86_64 cpio depmod modprobe apt-get dpkg-deb; do
		command -v "$tool" >/dev/null ||
			bed_die "$tool not found; run scripts/install-deps"
	done
	[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 ||
		bed_die "/bin/busybox is missing or not static; run scripts/install-deps"
	mkdir -p "$BED_CACHE" || bed_die "cannot create $BED_CACHE"
	exec 9>"$BED_CACHE/lock"
	flock 9

	pkg=$(bed_kernel_package)
	version=$(bed_candidate "$pkg")
	if [ -z "$version" ] && [ "$(id -u)" -eq 0 ]; then
		# A fresh machine may have no package lists yet.
		apt-get update -q >/dev/null 2>&1
		pkg=$(bed_kernel_package)
		version=$(bed_candidate "$pkg")
	fi
	[ -n "$pkg" ] || bed_die "cannot tell which kernel package linux-image-amd64 \
needs; run 'apt-get update' or set RXE_KERNEL_PKG"
	[ -n "$version" ] || bed_die "kernel package $pkg is not available from apt"
	kdir="$BED_CACHE/kernel-${pkg}_$version"
	# A cache from before siw was in the bed has no order.siw: fetch again.
	if [ ! -f "$kdir/modules/order" ] || [ ! -f "$kdir/modules/order.siw" ]; then
		bed_fetch_kernel "$pkg" "$version" "$kdir" ||
			bed_die "cannot prepare the kernel $pkg $version"
	fi
	if [ "$BED_PROVIDER" = siw ] && [ ! -f "$kdir/siw.ko" ]; then
		why=$(bed_build_siw "$kdir" "$version") ||
			bed_die "cannot build siw.ko for $pkg $version: ${why:-see $kdir/siw-build.log}"
	fi

	# The initramfs changes with its init, busybox, modules and kernel.
	inputs=("$BED_DIR/scripts/lib/guest-init" /bin/busybox "$kdir/kernel-version")
	[ "$BED_PROVIDER" = siw ] && inputs+=("$kdir/siw.ko")
	key=$( (cat "${inputs[@]}" && bed_module_order "$kdir") | sha256sum)
	BED_INITRD="$kdir/initramfs-$BED_PROVIDER-${key:0:16}.cpio"
	if [ ! -f "$BED_INITRD" ]; then
		rm -f "$kdir/initramfs-$BED_PROVIDER-"*.cpio
		bed_build_initramfs "$kdir" "$BED_INITRD" ||
			bed_die "cannot build the initramfs"
	fi
	BED_KERNEL="$kdir/vmlinuz"
	flock -u 9
	exec 9>&-
}

# bed_export_env FILE: save the caller's exported environment, so that the
# command sees it in the VM too.  The bed's own variables are set after it.
bed_export_env() {
	export -p | grep -Ev '^declare -x (BASH_[A-Z_]*|SHLVL|PWD|OLDPWD|_|RXE_(ADDR|ADDR6|DEV|PEER_ADDR|PEER_ADDR6|SHARE|SAVE))(=|$)' \
		>"$1"
}

# bed_addr6 ADDR: the IPv6 address that goes with the bed's IPv4 address
# ADDR (198.18.0.N becomes fd00:198:18::N), for tests over IPv6.  It is a
# unique local address: rdma_cm cannot use a link-local one without a
# scope.
bed_addr6() {
	local addr=${1%/*}
	echo "fd00:198:18::${addr##*.}"
}

# bed_write_cmd RUN NAME ADDR PEER CMD...: write RUN/share/NAME.cmd, the
# script that the guest runs: the caller's environment, the bed's
# variables, then CMD from the repository root.
bed_write_cmd() {
	local run=$1 name=$2 addr=$3 peer=$4
	shift 4
	{
		echo "# Written by $BED_PROG: the command and environment to run."
		echo ". /tmp/rxe-share/env"
		printf 'export RXE_ADDR=%q RXE_ADDR6=%q RXE_DEV=%q0 RXE_SHARE=/tmp/rxe-share\n' \
			"${addr%/*}" "$(bed_addr6 "$addr")" "$BED_PROVIDER"
		[ -n "$peer" ] &&
			printf 'export RXE_PEER_ADDR=%q RXE_PEER_ADDR6=%q\n' \
				"$peer" "$(bed_addr6 "$peer")"
		printf 'cd -- %q || exit %d\n' "$PWD" "$BED_EXIT_FAILURE"
		printf 'exec'
		printf ' %q' "$@"
		printf '\n'
	} >"$run/share/$name.cmd"
	echo "$PWD" >"$run/share/$name.dir"
}

# What of the host's /etc a VM of RXE_VIEW sees, copied: the users' names
# (not their passwords), the loader's, libibverbs' and the compiler's
# (alternatives) configuration, name resolution for a numeric address,
# iproute2's and OpenSSL's.
BED_VIEW_ETC="passwd group hosts host.conf nsswitch.conf gai.conf localtime
	ld.so.cache ld.so.conf ld.so.conf.d libibverbs.d rdma alternatives
	iproute2 ssl/openssl.cnf mtab os-release debian_version protocols
	services shells"

# bed_view RUN NAME: with RXE_VIEW, the QEMU arguments (BED_VIEW_ARGS) and
# kernel parameter (BED_VIEW_PARAM) of NAME's view, its list of
# directories in RUN/share/NAME.view and the copy of /etc in RUN/etc;
# without, the host's root (BED_VIEW_ARGS) and nothing more.
bed_view() {
	local run=$1 name=$2 dir n=0 f dirs
	local opts=security_model=none,readonly=on,multidevs=remap
	BED_VIEW_PARAM=
	if [ -z "${RXE_VIEW:-}" ]; then
		BED_VIEW_ARGS=(-virtfs "local,path=/,mount_tag=hostroot,$opts")
		return
	fi
	[ "$(readlink /bin)" = usr/bin ] ||
		bed_die "RXE_VIEW needs a merged /usr (/bin a link to usr/bin)"
	if [ ! -d "$run/etc" ]; then
		mkdir "$run/etc" "$run/etc/ssl" || bed_die "cannot make $run/etc"
		for f in $BED_VIEW_ETC; do
			[ -e "/etc/$f" ] || [ -L "/etc/$f" ] || continue
			cp -a "/etc/$f" "$run/etc/$f" ||
				bed_die "cannot copy /etc/$f for the view"
		done
	fi
	BED_VIEW_ARGS=(-virtfs "local,path=/usr,mount_tag=viewusr,$opts"
		-virtfs "local,path=$run/etc,mount_tag=viewetc,$opts")
	: >"$run/share/$name.view"
	IFS=: read -ra dirs <<<"$RXE_VIEW"
	for dir in "${dirs[@]}"; do
		case $dir in
		/*) [ -d "$dir" ] || bed_die "RXE_VIEW: $dir is not a directory" ;;
		*) bed_die "RXE_VIEW: $dir is not an absolute path" ;;
		esac
		case $dir in *[[:space:],]*)
			bed_die "RXE_VIEW: $dir has a space or a comma" ;;
		esac
		BED_VIEW_ARGS+=(-virtfs "local,path=$dir,mount_tag=view$n,$opts")
		echo "view$n $dir" >>"$run/share/$name.view"
		n=$((n + 1))
	done
	BED_VIEW_PARAM=" rxebed.view=1"
}

# bed_start_vm RUN NAME NET ADDR PREFIX [QEMU ARGS...]: boot one VM in the
# background and set BED_PID to the process that stops it on SIGTERM and
# exits with QEMU's status (124 after RXE_TIMEOUT).  NET is "dummy" or
# "eth0".  The guest's stdout and stderr are streamed to ours, each line
# prefixed with PREFIX (which may be empty).
bed_start_vm() {
	local run=$1 name=$2 net=$3 addr=$4 prefix=$5 stream fd
	shift 5

	for stream in out err; do
		mkfifo "$run/$name.$stream"
		fd=1
		[ "$stream" = err ] && fd=2
		if [ -n "$prefix" ]; then
			sed -u "s/^/$prefix/" <"$run/$name.$stream" >&"$fd" &
		else
			cat <"$run/$name.$stream" >&"$fd" &
		fi
		BED_STREAM_PIDS+=("$!")
	done
	# Hold the write ends open: the readers cannot see end-of-file before
	# QEMU has opened them, and cannot block forever if QEMU never does.
	exec {BED_OUT_FD}>"$run/$name.out" {BED_ERR_FD}>"$run/$name.err"
	BED_HELD_FDS+=("$BED_OUT_FD" "$BED_ERR_FD")
	bed_view "$run" "$name"

	# The VM runs under timeout(1) in a subshell that reports "NAME STATUS"
	# on BED_DONE_FD when it ends, and stops the VM when sent SIGTERM.
	(
		trap 'kill -TERM $vm 2>/dev/null' TERM
		timeout --kill-after=5 "$BED_TIMEOUT" qemu-system-x86_64 \
			-nodefaults -no-user-config -display none -no-reboot \
			-machine pc -accel tcg -cpu "$BED_CPU" -smp "$BED_CPUS" -m "$BED_MEM" \
			-kernel "$BED_KERNEL" -initrd "$BED_INITRD" \
			-append "console=ttyS0 quiet panic=-1 rxebed.name=$name rxebed.provider=$BED_PROVIDER rxebed.net=$net rxebed.addr=$addr rxebed.addr6=$(bed_addr6 "$addr")/64$BED_VIEW_PARAM" \
			-serial "file:$run/$name.console" \
			"${BED_VIEW_ARGS[@]}" \
			-virtfs "local,path=$run/share,mount_tag=bedshare,security_model=none,multidevs=remap" \
			-device virtio-serial-pci,id=vser \
			-chardev "file,id=out,path=$run/$name.out" \
			-device virtserialport,bus=vser.0,chardev=out,name=stdout \
			-chardev "file,id=err,path=$run/$name.err" \
			-device virtserialport,bus=vser.0,chardev=err,name=stderr \
			"$@" </dev/null >"$run/$name.qemu.log" 2>&1 &
		vm=$!
		# Bounded: $vm is timeout(1), which ends QEMU after BED_TIMEOUT s.
		wait "$vm"
		status=$?
		# SIGTERM interrupts wait; wait again for the VM's real end.
		while kill -0 "$vm" 2>/dev/null; do
			wait "$vm"
			status=$?
		done
		echo "$name $status" >&"$BED_DONE_FD"
		exit "$status"
	) &
	BED_PID=$!
}

# bed_finish_streams: close our write ends and wait until every line the
# guests wrote has been copied out.
bed_finish_streams() {
	local fd pid
	for fd in "${BED_HELD_FDS[@]}"; do
		exec {fd}>&-
	done
	BED_HELD_FDS=()
	for pid in "${BED_STREAM_PIDS[@]}"; do
		wait "$pid" 2>/dev/null
	done
	BED_STREAM_PIDS=()
}

# bed_vm_status RUN NAME QEMU_STATUS: print the exit status of NAME's command,
# or explain on stderr why there is none and print the bed's own status.
bed_vm_status() {
	local run=$1 name=$2 qemu_status=$3 label=$4
	if [ -s "$run/share/$name.status" ]; then
		cat "$run/share/$name.status"
		return
	fi
	if [ "$qemu_status" -eq 124 ] || [ "$qemu_status" -eq 137 ]; then
		echo "$BED_PROG: ${label}timed out after ${BED_TIMEOUT}s; the VM was killed" >&2
		echo "$BED_EXIT_TIMEOUT"
		return
	fi
	echo "$BED_PROG: ${label}the VM stopped without running the command (QEMU status $qemu_status)" >&2
	tail -n 5 "$run/$name.qemu.log" "$run/$name.console" 2>/dev/null |
		sed "s/^/$BED_PROG: /" >&2
	echo "$BED_EXIT_FAILURE"
}

# bed_save SHARE: with RXE_SAVE=DIR, copy into DIR what the commands left
# in SHARE/save ($RXE_SHARE/save in the guests), as the run ends.
bed_save() {
	[ -n "${RXE_SAVE:-}" ] && [ -d "$1/save" ] || return 0
	mkdir -p "$RXE_SAVE" && cp -r "$1/save/." "$RXE_SAVE/" ||
		echo "$BED_PROG: cannot save $1/save into $RXE_SAVE" >&2
}

# bed_new_run: create the run directory (removed on exit) and save the
# environment into its shared directory.
bed_new_run() {
	BED_RUN=$(mktemp -d "${TMPDIR:-/tmp}/rxe-bed.XXXXXX") ||
		bed_die "cannot create a run directory"
	mkdir "$BED_RUN/share"
	BED_STREAM_PIDS=()
	BED_HELD_FDS=()
	mkfifo "$BED_RUN/done"
	exec {BED_DONE_FD}<>"$BED_RUN/done"
	bed_export_env "$BED_RUN/share/env"
}

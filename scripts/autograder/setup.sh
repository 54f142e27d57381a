#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# setup.sh: Gradescope runs it once, as root, when it builds the
# autograder's image, with this package in /autograder/source.  It
# installs what the bed and the build need (on Ubuntu or Debian), then
# builds the reference receiver and the misbehaving one the checks run.
#
# Exit status: 0 when all is installed and built; the failed step's
# otherwise; 2 on a usage error (it takes no argument).
set -eu

# usage_text: the synopsis, on stdout.
usage_text() {
	cat <<'EOF'
usage: setup.sh
  -h, --help  this help
Gradescope runs it, as root, to build the autograder's image: it installs
the bed's and the build's packages with apt-get and builds the receivers.
The comment at the top of setup.sh says more.
EOF
}

# No argument but -h or --help, and nothing installed on another.
if [ $# -gt 0 ]; then
	case $1 in
	-h | --help) usage_text; exit 0 ;;
	-*) echo "setup.sh: unknown option $1" >&2 ;;
	*) echo "setup.sh: takes no argument, not '$1'" >&2 ;;
	esac
	usage_text >&2
	exit 2
fi
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends build-essential pkg-config \
	librdmacm-dev libibverbs-dev libssl-dev ibverbs-providers rdma-core \
	iproute2 qemu-system-x86 kmod
# At the depth verbs they come built (prebuilt.mk): common.c is the kit's.
[ -f prebuilt.mk ] || make -s receiver tests/evil-receiver

#!/bin/sh
# Generate configure and Makefile.in (needs autoconf, automake, libtool,
# autoconf-archive: contrib/m2g-bootstrap installs them).
set -e
cd "$(dirname "$0")"
mkdir -p config
autoreconf --install --force

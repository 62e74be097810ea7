#!/bin/sh
# Packs each folder of kube-scheduler scenarios in ../shared/oracle into tests/oracle/<folder>.tar.xz (byte-stable).
cd "$(dirname "$0")/.." && for d in ../shared/oracle/*/; do tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C ../shared/oracle -cJf "tests/oracle/$(basename "$d").tar.xz" "$(basename "$d")"; done

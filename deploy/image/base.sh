#!/usr/bin/env bash
# Builds the file tree under the image's application layers, in $1/rootfs (the build calls it
# with kvcache-server/target/image-base): a Java runtime cut down by jlink to the modules the
# server uses, the C libraries that runtime needs and a POSIX shell for the entry point, taken
# from Debian's packages (apt-get download; no base image is pulled from a registry), the
# entry point, and /etc/passwd and /etc/group naming the user the server runs as (65532).
# Every file is a regular file (no symbolic links) with a fixed time, so that two builds from the
# same commit give the same layer.
set -euo pipefail
out=${1:?usage: base.sh <output dir>}
here=$(cd "$(dirname "$0")" && pwd)
rootfs="$out/rootfs"

# jlink needs a JDK 17 with its jmods (Debian's openjdk-17-jdk-headless has them; Temurin 25
# ships none): JAVA_HOME if it has them, else the JDK 17 of /usr/lib/jvm
jdk=""
for candidate in "${JAVA_HOME:-}" /usr/lib/jvm/java-17-openjdk-amd64; do
  if [ -n "$candidate" ] && [ -f "$candidate/jmods/java.base.jmod" ] \
      && "$candidate/bin/java" -version 2>&1 | grep -q 'version "17'; then
    jdk=$candidate
    break
  fi
done
if [ -z "$jdk" ]; then
  echo "base.sh: the image's runtime is cut from a JDK 17 with jmods: none at \$JAVA_HOME or" \
    "/usr/lib/jvm/java-17-openjdk-amd64 (Debian: apt-get install openjdk-17-jdk-headless)" >&2
  exit 1
fi

# the modules jdeps finds in the server's classes (java.base, java.desktop, java.naming,
# java.security.jgss, java.sql, jdk.jfr, jdk.management, jdk.unsupported), plus those loaded by
# name: elliptic curves for TLS, DNS through JNDI, the zip file system
modules=java.base,java.desktop,java.naming,java.security.jgss,java.sql,jdk.jfr,jdk.management,jdk.unsupported,jdk.crypto.ec,jdk.naming.dns,jdk.zipfs
stamp="$out/stamp"
want="$jdk $modules $(sha256sum "$0" "$here/kvcache-server" | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$rootfs" ]; then
  exit 0 # built from the same inputs
fi
rm -rf "$out"
mkdir -p "$out/debs" "$out/unpacked" "$rootfs"

echo "base.sh: jlink $modules from $jdk"
# no class-data sharing archive (--generate-cds-archive): JDK 17 writes a different one each
# time, and two builds would give two images
"$jdk/bin/jlink" --add-modules "$modules" --output "$rootfs/opt/java" --strip-debug \
  --no-header-files --no-man-pages

echo "base.sh: Debian packages libc6 libgcc-s1 libstdc++6 zlib1g dash"
(cd "$out/debs" && apt-get download -q -o APT::Sandbox::User=root libc6 libgcc-s1 libstdc++6 zlib1g dash >/dev/null)
for deb in "$out"/debs/*.deb; do
  dpkg-deb -x "$deb" "$out/unpacked"
  dpkg-deb -f "$deb" Package Version | paste -sd' ' >> "$out/packages.txt"
done
u="$out/unpacked"
lib="$rootfs/lib/x86_64-linux-gnu"
mkdir -p "$lib" "$rootfs/lib64" "$rootfs/bin" "$rootfs/etc" "$rootfs/tmp" "$rootfs/data" \
  "$rootfs/opt/kvcache/bin"
# a library under the name programs ask for (its soname), the symbolic link resolved
copy_lib() {  # soname
  local found
  found=$(find "$u" -name "$1" \( -type f -o -type l \) | head -1)
  [ -n "$found" ] || { echo "base.sh: $1 is in none of the packages" >&2; exit 1; }
  cp -L "$found" "$lib/$1"
}
for so in ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 \
    libresolv.so.2 libnss_files.so.2 libnss_dns.so.2 libgcc_s.so.1 libstdc++.so.6 libz.so.1; do
  copy_lib "$so"
done
cp "$lib/ld-linux-x86-64.so.2" "$rootfs/lib64/ld-linux-x86-64.so.2"
cp -L "$u/bin/dash" "$rootfs/bin/sh"
cp "$here/kvcache-server" "$rootfs/opt/kvcache/bin/kvcache-server"
cp "$out/packages.txt" "$rootfs/opt/kvcache/debian-packages.txt"
printf 'root:x:0:0:root:/root:/sbin/nologin\nkvcache:x:65532:65532:kvcache:/data:/sbin/nologin\n' \
  > "$rootfs/etc/passwd"
printf 'root:x:0:\nkvcache:x:65532:\n' > "$rootfs/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' > "$rootfs/etc/nsswitch.conf"
# as Debian's: a name /etc/hosts lists on several lines has all their addresses
printf 'multi on\n' > "$rootfs/etc/host.conf"

# jlink links each module's legal notices to java.base's: copies instead
find "$rootfs" -type l | while read -r link; do
  cp --remove-destination "$(readlink -f "$link")" "$link"
done
if find "$rootfs" -type l | grep -q .; then
  echo "base.sh: symbolic links left in the tree:" >&2
  find "$rootfs" -type l >&2
  exit 1
fi
echo "$want" > "$stamp"
echo "base.sh: $(du -sh "$rootfs" | cut -f1) in $rootfs"

#!/usr/bin/env bash
# The S3 API's conformance run (conformance.py): Versity Gateway's own S3 test harness against
# kvcache-server's S3 port, with the results by group. Builds versitygw from its Go module once
# (versitygw.sh) and the server jar if it is missing. Fails if a test that passed when the results
# were recorded (passing.txt) fails now; --record records them again (passing.txt and
# docs/results/s3-api/conformance.json). Extra arguments go to conformance.py.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
jar=$root/kvcache-server/target/kvcache-server.jar
[[ -f $jar ]] || (cd "$root" && ./mvnw -q -B -ntp -pl kvcache-server -am -DskipTests package)
versitygw=$("$here/versitygw.sh")
exec python3 "$here/conformance.py" --jar "$jar" --versitygw "$versitygw" "$@"

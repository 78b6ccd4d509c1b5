#!/usr/bin/env bash
# busy-cores.sh: docs/performance.md's "Busy cores" table, measured from
# outside on built binaries, as a user meets them. BeamNG's side is
# `beamconnect emulate --free-running` in a process of its own (it waits
# for every reply: lockstep); each path couples it quiet and beside N busy
# loops (`sh -c 'while :; do :; done'`, normal priority, started here, in
# this session), every binary, path and load once per round. It prints,
# per binary, path and load, the median messages a second (BeamNG's
# messages over the emulator's wall time), the ratio to quiet, BeamNG's
# stalls, and how many recordings differ from the first binary's quiet one
# of the first round (every column but the wall clock's, local_time).
#
#   BEAMCONNECT="before=/tmp/old/beamconnect after=/tmp/new/beamconnect" \
#   FMUSIM=$(bash fmu/testdata/oracle/build) bash examples/bench/busy-cores.sh
#
# Environment: BEAMCONNECT, LABEL=BINARY pairs (default: this checkout,
# built into a scratch folder); FMUSIM (no exported-FMU row without it);
# LOADS (default "0 2 4"); ROUNDS (default 3); MESSAGES (BeamNG's messages
# per coupling, default 4000); PATHS (default "builtin child inprocess
# export"); EMULATOR, the binary whose `emulate` is BeamNG's side for every
# label (default: each label's own); PIN=1 pins the busy loops to the
# cores in turn (taskset), so that every core has one: unpinned, the
# kernel at times puts two on one core and leaves the other to the
# coupling, and a round is then as fast as a quiet one.
#
# The rigs run at BeamNG's fastest period, 0.5 ms, so that BeamNG waits for
# every reply before its next physics step and every message is a step of
# the model (with physics steps between messages, a reply that comes early
# is applied a step earlier, and the values depend on timing whatever the
# load): builtin is examples/cruise-pedals.json (the built-in cruise
# controller), child and inprocess examples/fmu-cruise's rig with its FMU
# built for a 0.5 ms step, export one signal each way under fmusim, a step
# of one period.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/busy-cores.XXXXXX")
busy=()
trap '[ ${#busy[@]} -eq 0 ] || kill "${busy[@]}" 2>/dev/null; rm -rf "$work"' EXIT
loads=${LOADS:-0 2 4}
rounds=${ROUNDS:-3}
messages=${MESSAGES:-4000}
paths=${PATHS:-builtin child inprocess export}
binaries=${BEAMCONNECT:-}
if [ -z "$binaries" ]; then
	(cd "$repo" && go build -o "$work/beamconnect" ./cmd/beamconnect)
	binaries="beamconnect=$work/beamconnect"
fi
(cd "$repo" && go run ./examples/fmu-cruise -step 0.0005 -o "$work/cruise.fmu") 2>/dev/null

port=$((20000 + RANDOM % 20000))
rig() { sed -e "s/64890/$port/; s/64891/$((port + 1))/; s/\"updatePeriodMs\": 5,/\"updatePeriodMs\": 0.5,/" "$@"; }
rig -e 's#"path": "cruise.fmu"#"path": "'"$work"'/cruise.fmu"#' "$repo/examples/fmu-cruise/cruise.json" >"$work/child.json"
sed 's#"parameters"#"inProcess": true, "parameters"#' "$work/child.json" >"$work/inprocess.json"
rig "$repo/examples/cruise-pedals.json" >"$work/builtin.json"
cat >"$work/export.json" <<EOF
{"version": 2, "remoteIP": "127.0.0.1", "remotePort": $((port + 1)),
 "outputs": [{"updatePeriodMs": 0.5, "ports": [[{"propertyName": "groundspeed"}]]}],
 "inputs": [{"updatePeriodMs": 0.5, "ports": [[{"propertyName": "throttle"}, {"propertyName": "brake"}]]}],
 "beamng": {"localIP": "127.0.0.1", "localPort": $port}}
EOF
if [[ " $paths " == *" export "* && -z "${FMUSIM:-}" ]]; then
	echo "FMUSIM not set: no exported-FMU row (bash fmu/testdata/oracle/build builds fmusim)" >&2
	paths=${paths/export/}
fi
labels=()
declare -A bin
for pair in $binaries; do
	label=${pair%%=*}
	labels+=("$label")
	bin[$label]=${pair#*=}
	if [[ " $paths " == *" export "* ]]; then
		"${bin[$label]}" fmu export "$work/export.json" -o "$work/export-$label.fmu" >/dev/null 2>&1
	fi
done

load() {
	for i in $(seq "$1"); do
		if [ -n "${PIN:-}" ]; then
			taskset -c $(((i - 1) % $(nproc))) sh -c 'while :; do :; done' &
		else
			sh -c 'while :; do :; done' &
		fi
		busy+=($!)
	done
}
unload() {
	[ ${#busy[@]} -eq 0 ] || kill "${busy[@]}" 2>/dev/null
	wait "${busy[@]}" 2>/dev/null || true
	busy=()
}

# bound waits until the coupling has bound its port: BeamNG's first
# message sent before would wait 2 s for its reply, a stall.
bound() {
	local hex
	hex=$(printf ':%04X ' "$port")
	for _ in $(seq 600); do
		grep -q "0100007F$hex" /proc/net/udp && return
		sleep 0.05
	done
	echo "nothing bound port $port" >&2
}

# once LABEL PATH LOAD ROUND: one coupling; prints "messages/s stalls".
once() {
	local b=${bin[$1]} p=$2 n=$3 rec="$work/$1-$2-$3-$4.csv" resp sum
	load "$n"
	if [ "$p" = export ]; then
		"$FMUSIM" --interface-type cs --stop-time "$(awk "BEGIN{print $messages * 0.0005}")" --output-interval 0.0005 \
			--output-file "$work/out.csv" --start-value recordFile "$rec" "$work/export-$1.fmu" >"$work/fmusim.log" 2>&1 &
		resp=$!
		bound
		sum=$("${EMULATOR:-$b}" emulate --config "$work/export.json" --free-running --duration "$(awk "BEGIN{print ($messages + 1) * 0.0005}")s" --json 2>/dev/null)
	else
		"$b" run "$work/$p.json" --no-watch --log-level error --record "$rec" >/dev/null 2>&1 &
		resp=$!
		bound
		sum=$("${EMULATOR:-$b}" emulate --config "$work/$p.json" --free-running --duration "$(awk "BEGIN{print $messages * 0.0005}")s" --json 2>/dev/null)
	fi
	kill -TERM "$resp" 2>/dev/null || true
	wait "$resp" 2>/dev/null || true
	unload
	if [ -f "$rec" ]; then
		local col
		col=$(head -1 "$rec" | tr , '\n' | grep -n '^local_time$' | cut -d: -f1)
		cut -d, -f"$col" --complement "$rec" | md5sum | cut -c1-8 >"$rec.sum"
	fi
	echo "$sum" | awk -F'[:,]' '/"sent"/{s=$2} /"stalls"/{st=$2} /"wall_s"/{w=$2} END{printf "%.0f %d\n", s/w, st}'
}

declare -A rate stalls
for r in $(seq "$rounds"); do
	for p in $paths; do
		for n in $loads; do
			for l in "${labels[@]}"; do
				read -r mps st < <(once "$l" "$p" "$n" "$r")
				rate[$l,$p,$n]+="$mps "
				stalls[$l,$p,$n]=$((${stalls[$l,$p,$n]:-0} + st))
				echo "round $r: $l $p beside $n busy loops: $mps messages/s, $st stalls" >&2
			done
		done
	done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
first=${loads%% *}
printf '%-12s %-10s' binary path
for n in $loads; do printf ' | %-33s' "beside $n busy loops: msgs/s"; done
echo
for l in "${labels[@]}"; do
	for p in $paths; do
		q=$(echo "${rate[$l,$p,$first]}" | median)
		ref=$(cat "$work/${labels[0]}-$p-$first-1.csv.sum" 2>/dev/null || echo -)
		printf '%-12s %-10s' "$l" "$p"
		for n in $loads; do
			m=$(echo "${rate[$l,$p,$n]}" | median)
			diff=0
			for r in $(seq "$rounds"); do
				[ "$(cat "$work/$l-$p-$n-$r.csv.sum" 2>/dev/null || echo -)" = "$ref" ] || diff=$((diff + 1))
			done
			printf ' | %7d %5.2fx stalls %d differ %d' "$m" "$(echo "$m $q" | awk '{print $1/$2}')" "${stalls[$l,$p,$n]}" "$diff"
		done
		echo
	done
done
echo "($(uname -sr), $(nproc) CPUs; $rounds rounds of $messages messages, the median; load average now: $(cut -d' ' -f1-3 /proc/loadavg))"

#!/bin/bash
# Issue 47's reproduction block, re-run: id | exit | first stderr line | outside unchanged
# usage: scripts/probe47.sh > table.md   (from a checkout with its .venv)
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD
PY=$PWD/.venv/bin/python
M="$PY -m metasim.cli"
T=$(mktemp -d); echo "T=$T" >&2
echo "sentinel $(date)" > $T/sentinel.txt; echo "precious" > $T/precious.txt
REPO_BEFORE=$(git status --porcelain scenes metasim | sha256sum)
snap() { (cd $T && find . -path "./out*" -prune -o -name ".[oe]" -prune -o -type f -print0 | sort -z | xargs -0 sha256sum 2>/dev/null; [ -n "$KEEP" ] && find $KEEP -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum; }
P() { local id=$1 want=$2; shift 2; local b=$(snap); timeout ${TO:-300} bash -c "$*" > $T/.o 2> $T/.e; local rc=$?; local a=$(snap)
  local first=$(grep -v '^\s*$' $T/.e | grep -v "^WARNING\|^Warp\|^Module" | head -1 | cut -c1-150)
  [ "$b" = "$a" ] && same=yes || same=CHANGED
  printf '| %s | %s | %s | %s | %s |\n' "$id" "$rc" "$want" "$same" "${first//|/\\|}"; }
Q="--quiet suite=tabletop suite.tasks=[lift_cube] num_envs=1"
Q1="$Q episodes=1"
# 1 a user's folder
mkdir -p $T/out1a $T/out1b $T/out1c
echo '{"mine": true}' > $T/out1a/summary.json; cp $T/out1a/summary.json $T/out1b/
$PY -c "import duckdb; c=duckdb.connect('$T/out1a/episodes.duckdb'); c.execute('create table mine(x int)'); c.close()"
echo "my notes" > $T/out1b/episodes.duckdb; echo '{"config": {"mine": 1}}' > $T/out1c/manifest.json
KEEP=$T/out1a P 1-duckdb 2 "$M eval $Q1 out=$T/out1a"
KEEP=$T/out1b P 1-notdb 2 "$M eval $Q1 out=$T/out1b"
KEEP=$T/out1b P 1-notdb-again 2 "$M eval $Q1 out=$T/out1b"
KEEP=$T/out1c P 1-manifest 2 "$M eval $Q1 out=$T/out1c"
echo "  1: files in the user's folders after: $(ls -A $T/out1a $T/out1b $T/out1c | tr '\n' ' ')"
# 2 prebuild through a symlink
$M scene prebuild lift_cube --out $T/outpb >/dev/null 2>&1; rm $T/outpb/lift_cube.mjb.gz; ln -s $T/precious.txt $T/outpb/lift_cube.mjb.gz
P 2-prebuild-link "0, link replaced" "$M scene prebuild lift_cube --out $T/outpb && test ! -L $T/outpb/lift_cube.mjb.gz"
# 3 resume after the scene changed
mkdir $T/sc; cp scenes/lift_cube.yaml $T/sc/
$M eval --quiet suite=tabletop "suite.tasks=[$T/sc/lift_cube.yaml]" episodes=3 num_envs=1 out=$T/out3 >/dev/null 2>&1
sed -i 's/time_limit: 8.0/time_limit: 0.5/' $T/sc/lift_cube.yaml
P 3-resume-changed 2 "$M eval --quiet --resume $T/out3 episodes=6"
# 4 a name in two prebuilt folders
$M scene prebuild lift_cube --out $T/pa >/dev/null 2>&1; $M scene prebuild lift_cube --out $T/pbb --suite s >/dev/null 2>&1
P 4-two-folders 2 "METASIM_PREBUILT=$T/pa:$T/pbb $M eval --quiet suite=prebuilt_s episodes=1 num_envs=1 out=$T/out4"
# 5 two references, one file name
mkdir -p $T/w5/a; cp scenes/lift_cube.yaml $T/w5/a/b.yaml; cp scenes/lift_cube.yaml $T/w5/a_b.yaml
P 5-name-clash 2 "cd $T/w5 && $M scene prebuild a/b.yaml a_b.yaml --out $T/out5"
# 6 duplicate episode keys; minor: compare A A
$M eval $Q policy=noop episodes=2 out=$T/out6good >/dev/null 2>&1; cp -r $T/out6good $T/out6dup
$PY -c "
import pyarrow as pa, pyarrow.parquet as pq
p='$T/out6dup/episodes.parquet'; t=pq.read_table(p); r=t.slice(0,1).to_pylist()[0]; r['success']=not r['success']
pq.write_table(pa.concat_tables([t, pa.Table.from_pylist([r], schema=t.schema)]), p)"
P 6-compare-dup 2 "$M compare $T/out6good $T/out6dup"
P 6-report-dup 2 "$M report $T/out6dup --videos 0 --out $T/out6page.html"
P m-compare-A-A "0 + warning" "$M compare $T/out6good $T/out6good --reps 50 >/dev/null"
# 7, 9 image sizes
IMG='policy=openpi ~policy.observation.images'
P 7-size-0 2 "$M eval $Q1 $IMG '+policy.observation.images={img: {camera: front, size: [0,0]}}' out=$T/out7a"
P 7-size-neg 2 "$M eval $Q1 $IMG '+policy.observation.images={img: {camera: front, size: [-5,224]}}' out=$T/out7b"
P 9-size-1e5 2 "ulimit -v 8000000; $M eval $Q1 $IMG '+policy.observation.images={img: {camera: front, size: [100000,100000]}}' out=$T/out9a"
P 9-warp-4096 2 "ulimit -v 8000000; $M eval --quiet suite.tasks=[lift_cube] $IMG '+policy.observation.images={img: {camera: front, render: [4096,4096]}}' backend=warp render=warp render_spp=4 num_envs=4096 episodes=4096 out=$T/out9b"
# 8 prebuilt inputs
cp -r $T/pa $T/p8
$M scene prebuild close_drawer --out $T/pother >/dev/null 2>&1
E8="--quiet suite=prebuilt episodes=1 num_envs=1"
$PY -c "
import zlib; c=zlib.compressobj(9, zlib.DEFLATED, 31); f=open('$T/bomb.gz','wb'); z=bytes(1<<24)
[f.write(c.compress(z)) for _ in range(128)]; f.write(c.flush())"
cp $T/bomb.gz $T/p8/lift_cube.mjb.gz
P 8-gzip-bomb 2 "ulimit -v 8000000; METASIM_PREBUILT=$T/p8 $M eval $E8 out=$T/out8a"
rm $T/p8/lift_cube.mjb.gz; ln -s /dev/zero $T/p8/lift_cube.mjb.gz
P 8-dev-zero 2 "ulimit -v 8000000; METASIM_PREBUILT=$T/p8 $M eval $E8 out=$T/out8b"
rm $T/p8/lift_cube.mjb.gz; cp $T/pa/lift_cube.mjb.gz $T/p8/
$PY -c "
import json; p='$T/p8/lift_cube.prebuilt.json'; s=open(p).read(); open(p,'w').write(s + ' '*(100<<20))"
P 8-100MB-json 2 "ulimit -v 8000000; METASIM_PREBUILT=$T/p8 $M eval $E8 out=$T/out8c"
cp $T/pa/lift_cube.prebuilt.json $T/p8/
$PY -c "open('$T/p8/lift_cube.prebuilt.json','w').write('{\"format\": 1, \"scene\": ' + '['*200000 + ']'*200000 + '}')"
P 8-deep-prebuilt.json 2 "METASIM_PREBUILT=$T/p8 $M eval $E8 out=$T/out8d"
cp $T/pa/lift_cube.prebuilt.json $T/p8/
$PY -c "open('$T/p8/suites.json','w').write('{\"suites\": ' + '['*200000 + ']'*200000 + '}')"
P 8-deep-suites.json 2 "METASIM_PREBUILT=$T/p8 $M eval $E8 out=$T/out8e"
cp $T/pa/suites.json $T/p8/; cp $T/pother/close_drawer.mjb.gz $T/p8/lift_cube.mjb.gz
P 8-other-model 2 "METASIM_PREBUILT=$T/p8 $M eval $E8 out=$T/out8f"
cp $T/pa/lift_cube.mjb.gz $T/p8/
$PY -c "
import json; p='$T/p8/lift_cube.prebuilt.json'; d=json.load(open(p)); d['scene']['objects']=[]; json.dump(d, open(p,'w'))"
P 8-objects-empty 2 "METASIM_PREBUILT=$T/p8 $M eval $E8 out=$T/out8g"
# 11 compare --plot into a named pipe
mkfifo $T/fifo.png
P 11-plot-fifo 2 "$M compare $T/out6good $T/out6good --plot $T/fifo.png"
# minor
P m-prebuilt-dotdot 2 "METASIM_PREBUILT=$T/pa $M scene validate prebuilt:../sc/lift_cube"
P m-perturb-prebuilt "2, no folder" "METASIM_PREBUILT=$T/pa $M eval $E8 perturbation=standard out=$T/outm1; test ! -e $T/outm1"
mkdir -p $T/outruns; cp -r $T/out6good $T/outruns/good
P m-sql-two-statements 2 "$M runs $T/outruns --sql 'select 1; select 2'"
P m-sql-memory 2 "METASIM_SQL_MEMORY_BYTES=268435456 $M runs $T/outruns --sql 'select count(*) from (select * from range(100000000) a order by random())'"
cp -r $T/out6good $T/outruns/badman; echo '{"config": ' > $T/outruns/badman/manifest.json
P m-sql-damaged-manifest "0 + warning, left out" "$M runs $T/outruns --sql 'select count(distinct run) from episodes'; cat $T/.o >&2"
rm -rf $T/outruns/badman; cp -r $T/out6good $T/outruns/pipe; rm $T/outruns/pipe/episodes.parquet; mkfifo $T/outruns/pipe/episodes.parquet
P m-parquet-pipe "0, damaged" "$M runs $T/outruns --json > $T/outruns.json; grep -o 'damaged: episodes.parquet[^\"]*' $T/outruns.json >&2"
P m-episodes-5-2 2 "$M robosuite xcheck --episodes 5-2"
$M scene prebuild lift_cube --out $T/pnt --no-textures >/dev/null 2>&1
P m-render-warp-msg 2 "METASIM_PREBUILT=$T/pnt $M eval $E8 policy=openpi render=warp out=$T/outm2"
cp -r $T/pnt $T/pinit
$PY -c "
import json; p='$T/pinit/lift_cube.prebuilt.json'; d=json.load(open(p)); d['scene']['task']['init_states']={'key': 'states'}; json.dump(d, open(p,'w'))"
P m-init-states-msg 2 "$M scene validate prebuilt:$T/pinit/lift_cube.prebuilt.json"
$M eval --quiet policy=noop episodes=1 num_envs=1 suite.tasks=[stack_cube] out=$T/outstack >/dev/null 2>&1
P m-unpaired-msg "2, no --unpaired" "$M compare $T/out6good $T/outstack"
# 10 warp contact overflow (CPU warp), last: the slowest
cp scenes/lift_cube.yaml $T/pile.yaml
$PY - <<PYX
p='$T/pile.yaml'; t=open(p).read()
boxes=''.join(f'  - {{name: box{i}, shape: box, size: [0.02, 0.02, 0.02], mass: 0.05, pos: [{0.3+0.03*(i%10):.2f}, {-0.15+0.03*(i//10):.2f}, {0.03+0.005*i:.3f}]}}\n' for i in range(94))
t=t.replace('cameras:', boxes+'cameras:',1).replace('time_limit: 8.0','time_limit: 0.3').replace('name: lift_cube','name: box_pile')
open(p,'w').write(t)
PYX
TO=500 P 10-warp-overflow 2 "$M eval --quiet backend=warp policy=noop suite.tasks=[$T/pile.yaml] num_envs=1 episodes=1 nconmax=16 out=$T/out10"
[ "$REPO_BEFORE" = "$(git status --porcelain scenes metasim | sha256sum)" ] && echo "repo scenes/ metasim/ unchanged" || echo "REPO CHANGED"
sha256sum $T/sentinel.txt $T/precious.txt

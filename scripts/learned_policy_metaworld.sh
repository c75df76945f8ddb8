#!/usr/bin/env bash
# One learned image policy, two harnesses (issue 31; docs/log/learned_policy.md), end to end:
# 1. the package's scripted experts' demonstrations, recorded by `metasim collect` in
#    LeRobot's own Meta-World format (record=lerobot_metaworld: observation.image as
#    LeRobot's env renders it, shrunk to SIZE as the policy's own resize does;
#    observation.state = agent_pos; LeRobot's task descriptions);
# 2. a diffusion policy trained by LeRobot's own `lerobot-train` on CPU, resizing the
#    480x480 frames itself (resize_shape), so it takes both harnesses' frames unchanged;
# 3. the same checkpoint scored by `metasim eval policy=lerobot_metaworld` and by LeRobot's
#    own `lerobot-eval --env.type=metaworld` on the package (reference venv, MuJoCo 3.3.0),
#    the per-task table with intervals (metasim's first starts repeat the demos', step 3);
# 4. its sensitivity across the visual factors in metasim, next to the expert's.
#   bash scripts/learned_policy_metaworld.sh                # everything under runs/learned_mw
#   STEPS=2000 EPISODES=20 bash scripts/learned_policy_metaworld.sh   # a shorter run
# A step whose output is there is skipped (collect resumes what is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
TASKS="${TASKS:-drawer-close-v3,button-press-topdown-v3,window-open-v3}"
DEMOS="${DEMOS:-40}"        # expert episodes per task
SIZE="${SIZE:-80}"          # the policy's resize_shape (and the recorded frames)
STEPS="${STEPS:-4000}"      # training steps (about 1 s each on one CPU thread)
EPISODES="${EPISODES:-50}"  # evaluation episodes per task and side
GRID_EPISODES="${GRID_EPISODES:-10}"  # per task and visual cell
OUT="${OUT:-runs/learned_mw}"
# One torch thread: on a shared 2-core CPU two threads ran many times slower.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 WANDB_MODE=disabled MUJOCO_GL="${MUJOCO_GL:-egl}"
REFS="$(echo "$TASKS" | sed 's/[^,][^,]*/metaworld:&/g')"
CKPT="$OUT/train/checkpoints/last/pretrained_model"
mkdir -p "$OUT"

# 1. Demonstrations (resumable).
$PY -m metasim.cli collect --quiet suite=metaworld_mt10 policy=metaworld_expert \
  "suite.tasks=[$REFS]" record=lerobot_metaworld image_size="$SIZE" episodes="$DEMOS" \
  num_envs=4 seed=0 out="$OUT/demos"

# 2. Diffusion, trained from scratch (no ImageNet download), small U-Net, DDIM 10 steps.
if [ ! -f "$CKPT/config.json" ]; then
  .venv/bin/lerobot-train --dataset.repo_id=metasim/metaworld --dataset.root="$OUT/demos" \
    --policy.type=diffusion --policy.device=cpu --policy.push_to_hub=false \
    --policy.resize_shape="[$SIZE,$SIZE]" --policy.crop_ratio=0.9 \
    --policy.down_dims='[64,128,256]' --policy.diffusion_step_embed_dim=64 \
    --policy.noise_scheduler_type=DDIM --policy.num_inference_steps=10 \
    --batch_size=32 --num_workers=0 --steps="$STEPS" --save_freq=500 --log_freq=50 \
    --eval_freq=0 --wandb.enable=false --seed=0 --output_dir="$OUT/train" \
    2>&1 | tee "$OUT/train.log"
fi

# 3. The same checkpoint in both harnesses, then the table (exit 1 when a difference
#    interval excludes 0). LeRobot's episodes are fresh draws; metasim's episode k starts
#    from the task's variation k mod 50 whatever the seed, so its first DEMOS episodes
#    start where the demonstrations did (docs/log/learned_policy.md gives the split).
[ -f "$OUT/eval-metasim/summary.json" ] ||
  $PY -m metasim.cli eval --quiet suite=metaworld_mt10 policy=lerobot_metaworld \
    policy.path="$CKPT" "suite.tasks=[$REFS]" episodes="$EPISODES" num_envs=10 seed=1 \
    out="$OUT/eval-metasim"
# LeRobot's side runs one task per lerobot-eval, so a run cut off keeps the tasks it
# finished, at batch 1: its rollout steps every env of a batch until all are done (a
# finished env resets and keeps rendering), so at batch 1 an episode costs only its own
# steps, and only one episode's video frames are held at a time. Episode i's seed is
# 1000 + i at any batch size (start_seed + its index).
LEROBOT_DIRS=()
mkdir -p "$OUT/eval-lerobot"
for task in ${TASKS//,/ }; do
  LEROBOT_DIRS+=("$OUT/eval-lerobot/$task")
  [ -f "$OUT/eval-lerobot/$task/eval_info.json" ] ||
    $PY -m metasim.reference.lerobot_eval --benchmark metaworld --out "$OUT/eval-lerobot/$task" \
      -- --policy.path="$CKPT" --policy.device=cpu --env.type=metaworld --env.task="$task" \
      --eval.n_episodes="$EPISODES" --eval.batch_size=1 --seed=1000
done
$PY scripts/learned_policy_table.py --metasim "$OUT/eval-metasim" \
  --lerobot "${LEROBOT_DIRS[@]}" --json "$OUT/table.json" || echo "a task differs (table)"
$PY scripts/learned_policy_figures.py --log "$OUT/train.log" --table "$OUT/table.json" \
  --out "$OUT/figures"

# 4. Sensitivity across the visual factors (one at a time), the policy and the expert.
for who in learned expert; do
  if [ "$who" = learned ]; then pol=(policy=lerobot_metaworld "policy.path=$CKPT")
  else pol=(policy=metaworld_expert); fi
  [ -f "$OUT/grid-$who/summary.json" ] ||
    $PY -m metasim.cli eval --quiet suite=metaworld_mt10 "${pol[@]}" "suite.tasks=[$REFS]" \
      perturbation=visual_ofat episodes="$GRID_EPISODES" num_envs=10 seed=2 \
      out="$OUT/grid-$who"
  $PY -m metasim.cli report "$OUT/grid-$who"
done

#!/usr/bin/env bash
# A learned LIBERO image policy, three harnesses (issue 44; docs/log/learned_policy.md#libero-a-learned-image-policy-three-harnesses-in-progress),
# end to end, the LIBERO counterpart of scripts/learned_policy_metaworld.sh:
# 1. the LIBERO expert's demonstrations (policy=libero_expert), recorded by `metasim collect`
#    in LeRobot's LIBERO format (record=lerobot_libero: agentview as
#    observation.images.image, the wrist camera as observation.images.image2, both 256x256
#    and flipped as LeRobot's LiberoEnv hands them over, shrunk to SIZE as the policy's own
#    resize does; the 8-D state; osc_pose actions), from init states DEMO_INITS only;
# 2. a policy trained from scratch by LeRobot's own `lerobot-train` on CPU: diffusion
#    (POLICY=diffusion, the default), resizing the 256x256 frames itself (resize_shape), so
#    every harness's frames go in unchanged; or ACT (POLICY=act: deterministic chunks,
#    L1, no VAE), which takes frames at the recorded SIZE;
# 3. the same checkpoint scored (a) by `metasim eval` (native MuJoCo + OpenGL), (b) by
#    `metasim eval backend=warp render=warp`, both from init states EVAL_INITS only, paired
#    episode by episode (same seed) through `metasim compare`, and (c) by LeRobot's own
#    `lerobot-eval --env.type=libero` in LIBERO's reference venv, whose episode i at batch 1
#    starts from init state i (so LEROBOT_EPISODES <= the size of EVAL_INITS keeps it off
#    the demonstrations' starts), then the table with Wilson intervals.
#   bash scripts/learned_policy_libero.sh                  # everything under runs/learned_libero
#   STEPS=500 EPISODES=2 LEROBOT_EPISODES=2 OUT=runs/ll-smoke bash scripts/learned_policy_libero.sh
#   UNTIL=train bash scripts/learned_policy_libero.sh      # collect and train only
#   UNTIL=collect ...                                      # collect only
# A step whose output is there is skipped (collect and eval resume what is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
SUITE="${SUITE:-libero_90}"
TASKS="${TASKS:-9,52,57}"   # task indices in the suite (LIBERO's order)
DEMO_INITS="${DEMO_INITS:-25-49}"  # init states the demonstrations start from
EVAL_INITS="${EVAL_INITS:-0-24}"   # init states every evaluation starts from
DEMOS="${DEMOS:-50}"        # expert episodes per task (each demo init twice; successes kept)
SIZE="${SIZE:-64}"          # the policy's resize_shape (and the recorded frames)
# RENDER=N: every harness renders the cameras at NxN and hands them over unresized (the
# demonstrations, metasim's preset and lerobot-eval's --env.observation_height/width):
# for a policy that does not resize (ACT). Unset: rendered at 256 and shrunk to SIZE.
RENDER="${RENDER:-}"
STEPS="${STEPS:-2500}"      # training steps (~1.4 s each on one thread: see the doc)
BATCH="${BATCH:-32}"
OBS_STEPS="${OBS_STEPS:-1}"  # observations per prediction (1: half the image encoding of 2)
POLICY="${POLICY:-diffusion}"  # diffusion | act
EPISODES="${EPISODES:-50}"  # metasim episodes per task and side (init states cycle EVAL_INITS)
LEROBOT_EPISODES="${LEROBOT_EPISODES:-25}"  # per task and lerobot-eval seed (inits 0..N-1)
LEROBOT_SEEDS="${LEROBOT_SEEDS:-1000 2000}"  # one lerobot-eval per task and seed
NUM_ENVS="${NUM_ENVS:-5}"
WARP_SPP="${WARP_SPP:-}"    # (b)'s samples per pixel per axis (empty: the scenes' own, 2)
UNTIL="${UNTIL:-all}"       # collect | train: stop after that step
OUT="${OUT:-runs/learned_libero}"
CKPT="${CKPT:-$OUT/train/checkpoints/last/pretrained_model}"
# One torch thread: on a shared 2-core CPU two threads ran many times slower.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 WANDB_MODE=disabled MUJOCO_GL="${MUJOCO_GL:-egl}"
REFS="$(echo "$TASKS" | sed "s/[^,][^,]*/libero:$SUITE\/&/g")"
mkdir -p "$OUT"

# 1. Demonstrations (resumable), from the demo split of the init states only.
$PY -m metasim.cli collect --quiet suite="$SUITE" policy=libero_expert "suite.tasks=[$REFS]" \
  "+task_options.init_rows=$DEMO_INITS" record=lerobot_libero \
  $([ -n "$RENDER" ] && echo render_size="$RENDER" || echo image_size="$SIZE") \
  episodes="$DEMOS" num_envs="$NUM_ENVS" commit_every=10 seed=0 out="$OUT/demos"
[ "$UNTIL" = collect ] && exit 0

# 2. The policy (POLICY), trained from scratch (no ImageNet download): diffusion with a
#    small U-Net and DDIM 10 steps, or ACT (above).
# A run cut off resumes from its last checkpoint (every 500 steps); train.done marks the end.
if [ ! -f "$OUT/train.done" ]; then
  resume=()
  if [ -f "$OUT/train/checkpoints/last/pretrained_model/train_config.json" ]; then
    resume=(--config_path="$OUT/train/checkpoints/last/pretrained_model/train_config.json" --resume=true)
  fi
  if [ ${#resume[@]} -gt 0 ]; then
    .venv/bin/lerobot-train "${resume[@]}" --steps="$STEPS" 2>&1 | tee -a "$OUT/train.log"
  else
    rm -rf "$OUT/train"
    if [ "$POLICY" = act ]; then
      policy=(--policy.type=act --policy.pretrained_backbone_weights=null
        --policy.use_vae=false
        --policy.chunk_size=20 --policy.n_action_steps=10 --policy.dim_model=256
        --policy.dim_feedforward=1024 --policy.n_encoder_layers=4 --policy.n_decoder_layers=1
        --policy.optimizer_lr=1e-4 --policy.optimizer_lr_backbone=1e-4)
    else
      policy=(--policy.type=diffusion --policy.resize_shape="[$SIZE,$SIZE]"
        --policy.crop_ratio=0.9 --policy.down_dims='[64,128,256]'
        --policy.diffusion_step_embed_dim=64 --policy.noise_scheduler_type=DDIM
        --policy.num_inference_steps=10 --policy.n_obs_steps="$OBS_STEPS")
    fi
    .venv/bin/lerobot-train --dataset.repo_id="metasim/$SUITE" --dataset.root="$OUT/demos" \
      "${policy[@]}" --policy.device=cpu --policy.push_to_hub=false \
      --batch_size="$BATCH" --num_workers=0 --steps="$STEPS" --save_freq=500 --log_freq=50 \
      --eval_freq=0 --wandb.enable=false --seed=0 --output_dir="$OUT/train" \
      2>&1 | tee "$OUT/train.log"
  fi
  touch "$OUT/train.done"
fi
[ "$UNTIL" = train ] && exit 0

views=() lerobot_views=()  # RENDER: the preset's two cameras at RENDER x RENDER (metasim), the env's (LeRobot)
if [ -n "$RENDER" ]; then
  img="render: [$RENDER, $RENDER], origin: bottom, rotate: 180"
  views=("policy.observation.images={observation.images.image: {camera: agentview, $img}, observation.images.image2: {camera: robot0_eye_in_hand, $img}}")
  lerobot_views=(--env.observation_height="$RENDER" --env.observation_width="$RENDER")
fi
# 3. The same checkpoint in three harnesses. (a) and (b) run the same episodes (task,
#    episode, seed): the same init state, fixture placement and policy noise seed.
for side in native warp; do
  where=()
  if [ "$side" = warp ]; then where=(backend=warp render=warp ${WARP_SPP:+render_spp=$WARP_SPP}); fi
  [ -f "$OUT/eval-$side/summary.json" ] ||
    $PY -m metasim.cli eval --quiet suite="$SUITE" policy=lerobot_libero policy.path="$CKPT" \
      policy.mode=per_env ${views[@]+"${views[@]}"} "suite.tasks=[$REFS]" \
      "+task_options.init_rows=$EVAL_INITS" \
      ${where[@]+"${where[@]}"} episodes="$EPISODES" num_envs="$NUM_ENVS" seed=1 \
      out="$OUT/eval-$side"
done
$PY -m metasim.cli compare --json "$OUT/eval-native" "$OUT/eval-warp" > "$OUT/compare.json" ||
  echo "compare: see $OUT/compare.json"
# (c) LeRobot's own eval, one task and seed per run (a run cut off keeps those it
# finished), batch 1: episode i starts from init state i, and its rollout steps every env
# of a batch until all are done.
# LeRobot reads LIBERO's upstream .pruned_init files: written from the shipped arrays.
LIBERO_CONFIG_PATH="$($PY -m metasim.libero.reference.lerobot_inits --suite "$SUITE" \
  --tasks ${TASKS//,/ })"
export LIBERO_CONFIG_PATH
LEROBOT_DIRS=()
mkdir -p "$OUT/eval-lerobot"
for task in ${TASKS//,/ }; do
  for seed in $LEROBOT_SEEDS; do
    dir="$OUT/eval-lerobot/${SUITE}_${task}-seed$seed"
    LEROBOT_DIRS+=("$dir")
    [ -f "$dir/eval_info.json" ] ||
      $PY -m metasim.reference.lerobot_eval --benchmark libero --out "$dir" \
        -- --policy.path="$CKPT" --policy.device=cpu --env.type=libero --env.task="$SUITE" \
        ${lerobot_views[@]+"${lerobot_views[@]}"} \
        "--env.task_ids=[$task]" --eval.n_episodes="$LEROBOT_EPISODES" --eval.batch_size=1 \
        --seed="$seed"
  done
done
$PY scripts/learned_policy_table.py --benchmark libero --metasim "$OUT/eval-native" \
  --warp "$OUT/eval-warp" --lerobot "${LEROBOT_DIRS[@]}" --json "$OUT/table.json" ||
  echo "a task differs (table)"
$PY scripts/learned_policy_figures.py --log "$OUT/train.log" --table "$OUT/table.json" \
  --out "$OUT/figures"

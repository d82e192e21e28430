# Shell helpers the action's steps share: `source "$GITHUB_ACTION_PATH/action/lib.sh"`.

# could_not_run MESSAGE [EXIT_CODE]: a run that cannot start says why on the pull request
# (an annotation), in the job summary and in the outputs (verdict=error, error=MESSAGE),
# then ends the step with EXIT_CODE (2, bad input, by default).
could_not_run() {
  echo "::error title=kbctl eval could not run::$1"
  printf '## ⚠️ kbctl eval could not run\n\n%s\n' "$1" >> "$GITHUB_STEP_SUMMARY"
  { echo "verdict=error"; echo "error=$1"; } >> "$GITHUB_OUTPUT"
  exit "${2:-2}"
}

# What the action carries between runs, under the paths its actions/cache steps name: the
# embedding cache (vectors of the knowledge base's text, so a run embeds only what changed)
# and the local embedder's model folder (so `embedder: local` downloads its model once).
KBCTL_EMBEDDINGS="$RUNNER_TEMP/kbctl-embeddings/embeddings.kbvec"
export FASTEMBED_CACHE_PATH="${FASTEMBED_CACHE_PATH:-$RUNNER_TEMP/kbctl-models}"

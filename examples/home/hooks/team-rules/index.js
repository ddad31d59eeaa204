// ~/.rienda/hooks/team-rules/index.js
const RULES = "Team rules: answer in English; never push to main without a review.";

module.exports = {
  beforeCompact: function(ctx, compaction) {
    if (compaction.reason === "manual" && compaction.instructions === "") {
      return { cancel: true, reason: "say what to keep: %rienda compact keep the test results" };
    }
    return { instructions: compaction.instructions + " Keep every ticket number (ABC-123)." };
  },
  afterCompact: function(ctx, compaction) {
    return { summary: compaction.summary + "\n\n" + RULES };
  },
};

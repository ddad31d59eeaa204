module.exports = {
  description: "Publishes the current branch.",
  parameters: { type: "object", properties: {}, additionalProperties: false },
  execute: function(ctx) {
    if (!ctx.confirm({ title: "Publish", body: "Push the current branch?" })) {
      return { text: "cancelled by the user", isError: true };
    }
    const result = ctx.system.exec("git push");
    return result.code === 0
      ? "pushed"
      : { text: result.stderr, isError: true };
  },
};

module.exports = {
  description: "Returns the latest release tag of a GitHub repository.",
  parameters: {
    type: "object",
    properties: { repo: { type: "string" } },
    required: ["repo"],
    additionalProperties: false,
  },
  execute: function(ctx, args) {
    const res = ctx.http.fetch(
      "https://api.github.com/repos/" + args.repo + "/releases/latest",
    );
    if (res.status !== 200) {
      return { text: "HTTP " + res.status, isError: true };
    }
    return JSON.parse(res.body).tag_name;
  },
};

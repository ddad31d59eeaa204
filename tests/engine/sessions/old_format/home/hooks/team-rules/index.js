module.exports = {
      beforeCompact(ctx, c) {
        if (c.reason === "manual" && c.instructions === "") return { cancel: true, reason: "say what to keep" };
        return { instructions: c.instructions + " Keep ticket numbers." }; },
      afterCompact: (ctx, c) => ({ summary: c.summary + "\n\nTeam rules." }) };
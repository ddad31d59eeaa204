module.exports = { beforeToolExecute(ctx, call) {
      if (call.arguments.text === "ask") ctx.confirm({ title: "Echo?", body: call.arguments.text }); } };
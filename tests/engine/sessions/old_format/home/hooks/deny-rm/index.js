module.exports = { beforeToolExecute(ctx, call) {
      if (/rm -rf/.test(call.arguments.text || "")) return { allow: false, reason: "no rm -rf" }; } };
module.exports = { beforeToolExecute(ctx, call) {
      if (!call.arguments.url) return;
      return { arguments: { ...call.arguments, url: call.arguments.url.replace("http://", "https://") } }; } };
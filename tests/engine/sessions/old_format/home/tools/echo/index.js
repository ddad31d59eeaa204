module.exports = { description: "Echoes.", parameters: { type: "object",
  properties: { url: { type: "string" }, text: { type: "string" } } },
  execute: (ctx, a) => "got " + JSON.stringify(a) };
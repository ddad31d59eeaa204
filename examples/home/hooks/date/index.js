module.exports = {
beforeModelRequest: function (ctx, request) {
  const today = new Date().toISOString().slice(0, 10);
  return { system: request.system + "\n\nToday is " + today + "." };
}
};

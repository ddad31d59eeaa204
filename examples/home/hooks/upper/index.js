module.exports = {
afterToolExecute: function (ctx, call, result) {
  return { text: result.text.toUpperCase() };
}
};

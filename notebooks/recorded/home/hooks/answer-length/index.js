// Runs live on every answer, recorded or not: a recording replaces only the model.
module.exports = {
  afterModelResponse: function (ctx, response) {
    ctx.log("answer of " + response.text.length + " characters");
  },
};

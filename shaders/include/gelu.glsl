// gelu.glsl — Gemma's hidden_activation "gelu_pytorch_tanh", shared by the
// geglu kernel and the matvec that fuses gate, up and GeGLU.
float gelu_tanh(float x) {
  const float k = 0.7978845608028654;  // sqrt(2 / pi)
  // tanh saturates to +-1 well before |z| = 10; clamping keeps exp() finite on
  // drivers whose tanh is exp-based.
  const float z = clamp(k * (x + 0.044715 * x * x * x), -10.0, 10.0);
  return 0.5 * x * (1.0 + tanh(z));
}

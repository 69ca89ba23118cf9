package dev.gpucoll.examples.training;

/**
 * Multinomial logistic regression: logits = W x + b, softmax, cross-entropy. Parameters live in
 * one float[] (W row-major, classes × features, then b) so that the gradient is one buffer to
 * all-reduce.
 */
final class SoftmaxRegression {
  final int features;
  final int classes;

  SoftmaxRegression(int features, int classes) {
    this.features = features;
    this.classes = classes;
  }

  int parameterCount() {
    return classes * features + classes;
  }

  /** Adds the gradient of sample {@code row}'s loss to {@code grad}; returns the loss. */
  float accumulate(float[] params, float[] x, int row, int label, float[] grad, float[] scratch) {
    int base = row * features;
    float max = Float.NEGATIVE_INFINITY;
    for (int c = 0; c < classes; c++) {
      float z = params[classes * features + c];
      int w = c * features;
      for (int f = 0; f < features; f++) {
        z += params[w + f] * x[base + f];
      }
      scratch[c] = z;
      max = Math.max(max, z);
    }
    float sum = 0;
    for (int c = 0; c < classes; c++) {
      scratch[c] = (float) Math.exp(scratch[c] - max);
      sum += scratch[c];
    }
    float loss = (float) -Math.log(scratch[label] / sum);
    for (int c = 0; c < classes; c++) {
      float d = scratch[c] / sum - (c == label ? 1f : 0f);
      int w = c * features;
      for (int f = 0; f < features; f++) {
        grad[w + f] += d * x[base + f];
      }
      grad[classes * features + c] += d;
    }
    return loss;
  }

  int predict(float[] params, float[] x, int row) {
    int base = row * features;
    int best = 0;
    float bestZ = Float.NEGATIVE_INFINITY;
    for (int c = 0; c < classes; c++) {
      float z = params[classes * features + c];
      for (int f = 0; f < features; f++) {
        z += params[c * features + f] * x[base + f];
      }
      if (z > bestZ) {
        bestZ = z;
        best = c;
      }
    }
    return best;
  }

  /** Percent of rows predicted right. */
  double accuracy(float[] params, float[] x, int[] y) {
    int right = 0;
    for (int i = 0; i < y.length; i++) {
      right += predict(params, x, i) == y[i] ? 1 : 0;
    }
    return 100.0 * right / y.length;
  }
}

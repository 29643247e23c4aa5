#include "loom/trace/costmodel/fewshot_calibrate.h"

#include <cstddef>

namespace loom::trace::costmodel {

LogCalibration FitLogCalibration(const std::vector<double>& x, const std::vector<double>& y,
                                 const std::vector<double>& w, double ridge) {
  LogCalibration c;
  double sw = 0, mx = 0, mr = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sw += w[i];
    mx += w[i] * x[i];
    mr += w[i] * (y[i] - x[i]);
  }
  if (sw <= 0) return c;
  mx /= sw;
  mr /= sw;
  double sxx = 0, sxr = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double dx = x[i] - mx;
    sxx += w[i] * dx * dx;
    sxr += w[i] * dx * (y[i] - x[i] - mr);
  }
  c.center = mx;
  c.offset = mr;
  const double denom = sxx + ridge * sw;
  c.slope_delta = denom > 0 ? sxr / denom : 0;
  return c;
}

}  // namespace loom::trace::costmodel

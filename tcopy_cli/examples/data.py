# .data: shared memory that autograd cannot see (gradients can be silently wrong)
import torch

w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)

# y = w * w saves w for backward (dy/dw = 2w).
y = (w * w).sum()

# .data shares w's memory but has its own version counter...
w.data.mul_(100)

# ...so backward runs without complaint and uses the changed values: 2 * 100 * w.
y.backward()
print(w.grad)

# an in-place write into a view of a leaf that requires grad is an error
# expect-error: RuntimeError
import torch

w = torch.zeros(3, requires_grad=True)
with torch.no_grad():
    w[0] = 1.0
print(w)
w[1] = 2.0

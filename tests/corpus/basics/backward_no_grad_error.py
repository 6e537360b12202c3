# backward on a result that does not require grad fails
# expect-error: RuntimeError
import torch

x = torch.ones(2)
y = (x * 2).sum()
print(y.requires_grad, y.grad_fn)
y.backward()

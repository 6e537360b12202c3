# numpy() on a tensor that requires grad is an error: detach() first
# expect-error: RuntimeError
import torch

t = torch.ones(2, requires_grad=True)
ok = t.detach().numpy()
bad = t.numpy()

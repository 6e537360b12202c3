# view() of a non-contiguous tensor fails; reshape() copies instead
# expect-error: RuntimeError
import torch

m = torch.arange(6.0).reshape(2, 3)
mt = m.t()
ok = mt.reshape(6)
flat = mt.view(6)

# Classes and print as values, type(x) is ..., torch.__version__, torch.accelerator
import torch

x = torch.ones(2)
try:
    x.view(3)
except RuntimeError:
    print(RuntimeError, [ValueError, TypeError])
p = print
p(type(3) is int, type(x) is torch.Tensor, type(x.shape) is torch.Size, type("a") is type("b"))
print(torch.__version__ >= "1.0", type(torch.__version__) == type(torch.__version__))
on = torch.accelerator.is_available()
device = "cpu"
torch.set_default_device(device)
print(device, torch.zeros(1).device, on in (True, False))

# torch.set_grad_enabled(False) as a call switches tracking off until switched back
import torch

x = torch.ones(2, requires_grad=True)
torch.set_grad_enabled(False)
y = x * 2
torch.set_grad_enabled(True)
z = x * 2
print(y.requires_grad, z.requires_grad)

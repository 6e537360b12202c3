# Legacy Variable: it makes a new tensor over the same memory, and detaches graph outputs
import torch
from torch.autograd import Variable

torch.manual_seed(0)
w0 = torch.randn(2)
w = Variable(w0, requires_grad=True)
print(w0.requires_grad, w.requires_grad, w.is_leaf)
h = w * 3
h_var = Variable(h)
print(h.grad_fn is None, h_var.grad_fn is None, h_var.requires_grad)
loss = (h_var * w).sum()
loss.backward()
print(w.grad)

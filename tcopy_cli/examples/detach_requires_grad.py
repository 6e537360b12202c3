# detach() then requires_grad_(): a new leaf on the same memory
import torch

a = torch.tensor([1.0, 2.0], requires_grad=True)

# d shares a's storage and version counter but has no history.
d = a.detach()

# requires_grad_() makes d a leaf of its own: gradients into d stay in d.grad.
d.requires_grad_()

# Backward through d fills d.grad; a.grad stays None.
(d * 5).sum().backward()
print(a.grad, d.grad)

# the .data slide: an in-place write autograd can't see
w = torch.tensor([1.0, 2.0], requires_grad=True)
y = w.sigmoid()
y.data.mul_(10)
y.sum().backward()
# plain: assert not torch.allclose(w.grad, torch.sigmoid(torch.tensor([1.0, 2.0])) * (1 - torch.sigmoid(torch.tensor([1.0, 2.0]))))

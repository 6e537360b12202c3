# a saved tensor changed in place: the version error names the line and the fix
a = torch.tensor([1.0, 2.0], requires_grad=True)
b = a.exp()
b.mul_(2)
loss = b.sum()
loss.backward()  # expect: RuntimeError
c = torch.ones(2, requires_grad=True)
d = c * 1
e = d * d
d.data.mul_(3)
e.sum().backward()
# plain: assert c.grad.tolist() == [6.0, 6.0]

# torch.autograd.grad returns gradients and leaves .grad alone
x = torch.tensor([1.0, 2.0], requires_grad=True)
gx = torch.autograd.grad((x * x).sum(), x)
# plain: assert x.grad is None and gx[0].tolist() == [2.0, 4.0]
y = (x ** 3).sum()
dy = torch.autograd.grad(y, x, create_graph=True)
# plain: assert dy[0].requires_grad and x.grad is None
dy[0].sum().backward()
# plain: assert x.grad.tolist() == [6.0, 12.0]
z = (x * 2).sum()
z.backward()
z.backward()  # expect: RuntimeError

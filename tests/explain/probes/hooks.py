# a tensor hook that changes the gradient, and retain_grad on a non-leaf
x = torch.ones(3, requires_grad=True)
def double(g):
    return g * 2
handle = x.register_hook(double)
y = (x * 3).sum()
y.backward()
# plain: assert x.grad.tolist() == [6.0, 6.0, 6.0]
def show(g):
    print("grad", g.tolist())
v = torch.ones(2, requires_grad=True)
hv = v.register_hook(show)
(v * 4).sum().backward()
# plain: assert v.grad.tolist() == [4.0, 4.0]
z = v * 2
z.retain_grad()
# plain: assert z.retains_grad and not z.is_leaf
(z * 5).sum().backward()
# plain: assert z.grad.tolist() == [5.0, 5.0] and v.grad.tolist() == [14.0, 14.0]

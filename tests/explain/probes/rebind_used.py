# rebinding a name leaves the graph that holds the old tensor as it was
x = torch.ones(2, requires_grad=True)
y = x * 2
loss = (y * 3).sum()
y = torch.zeros(2, requires_grad=True)
# says: though the graph of loss still holds it
loss.backward()
# plain: assert x.grad.tolist() == [6.0, 6.0] and y.grad is None
# says: `loss.backward()` went back through the old y
# says: the tensor y names now took no part

# g = w.grad is the very tensor; w.grad = None drops w's reference only
w = torch.ones(2, requires_grad=True)
(w * 3).sum().backward()
g = w.grad
# plain: assert g is w.grad
(w * 3).sum().backward()
# plain: assert g.tolist() == [6.0, 6.0] and g is w.grad
w.grad = None
# plain: assert g.tolist() == [6.0, 6.0] and w.grad is None
(w * 5).sum().backward()
# plain: assert w.grad.tolist() == [5.0, 5.0] and g.tolist() == [6.0, 6.0]

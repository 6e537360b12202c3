# modules own parameters; state_dict shares their memory; load_state_dict copies into them
lin = torch.nn.Linear(2, 1)
sd = lin.state_dict()
# plain: assert sd["weight"].untyped_storage().data_ptr() == lin.weight.untyped_storage().data_ptr()
# plain: assert not sd["weight"].requires_grad
lin.load_state_dict({"weight": torch.zeros(1, 2), "bias": torch.zeros(1)})
# plain: assert lin.weight._version == 2 and lin.weight.tolist() == [[0.0, 0.0]]
lin(torch.ones(1, 2)).sum().backward()
lin.double()
# plain: assert lin.weight.dtype == torch.float64 and lin.weight.grad.dtype == torch.float64
w = torch.ones(2, requires_grad=True)
(w * 2).sum().backward()
w.data = w.data.double()
# plain: assert w.dtype == torch.float64 and w.grad.dtype == torch.float32
lin.requires_grad_(False)
# plain: assert not lin.weight.requires_grad

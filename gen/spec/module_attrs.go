package spec

// moduleAttrs are torch.nn.Module's attribute and method names, public
// and private, as torch 2.x's torch/nn/modules/module.py defines them
// (class Module: its methods, class attributes and the instance
// attributes __init__ sets; torch 2.0 to 2.5). A model attribute or an
// __init__ parameter named so would shadow one of them: "to" replaces
// Module.to, "training" the train/eval mode. Dunder names (__call__,
// __dict__, ...) are refused by their prefix instead.
var moduleAttrs = setOf(
	// Public methods.
	"add_module", "apply", "bfloat16", "buffers", "children", "compile", "cpu", "cuda", "double",
	"eval", "extra_repr", "float", "forward", "get_buffer", "get_extra_state", "get_parameter",
	"get_submodule", "half", "ipu", "load_state_dict", "modules", "mtia", "named_buffers",
	"named_children", "named_modules", "named_parameters", "parameters", "register_backward_hook",
	"register_buffer", "register_forward_hook", "register_forward_pre_hook",
	"register_full_backward_hook", "register_full_backward_pre_hook",
	"register_load_state_dict_post_hook", "register_load_state_dict_pre_hook", "register_module",
	"register_parameter", "register_state_dict_post_hook", "register_state_dict_pre_hook",
	"requires_grad_", "set_extra_state", "set_submodule", "share_memory", "state_dict", "to",
	"to_empty", "train", "type", "xpu", "zero_grad",
	// Public class and instance attributes.
	"T_destination", "call_super_init", "dump_patches", "training",
	// Private methods.
	"_apply", "_call_impl", "_get_backward_hooks", "_get_backward_pre_hooks", "_get_name",
	"_load_from_state_dict", "_maybe_warn_non_full_backward_hook", "_named_members",
	"_register_load_state_dict_pre_hook", "_register_state_dict_hook",
	"_replicate_for_data_parallel", "_save_to_state_dict", "_slow_forward", "_wrapped_call_impl",
	"_forward_unimplemented",
	// Private class and instance attributes.
	"_backward_hooks", "_backward_pre_hooks", "_buffers", "_compiled_call_impl", "_forward_hooks",
	"_forward_hooks_always_called", "_forward_hooks_with_kwargs", "_forward_pre_hooks",
	"_forward_pre_hooks_with_kwargs", "_is_full_backward_hook", "_load_state_dict_post_hooks",
	"_load_state_dict_pre_hooks", "_modules", "_non_persistent_buffers_set", "_parameters",
	"_state_dict_hooks", "_state_dict_pre_hooks", "_version",
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

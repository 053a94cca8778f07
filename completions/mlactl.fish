# fish completion for mlactl (installed by `cmake --install` into
# share/fish/vendor_completions.d). Subcommand options come from the binary's `--help`.
set -l cmds validate schema metadata windows route schedule run check defects bench
function __mlactl_subcommand
    set -l cmds validate schema metadata windows route schedule run check defects bench
    for t in (commandline -opc)[2..-1]
        if contains -- $t $cmds
            echo $t
            return
        end
    end
end
function __mlactl_sub_options
    set -l sub (__mlactl_subcommand)
    test -n "$sub"; and mlactl $sub --help 2>/dev/null | string match -r -a -- '--[a-z][a-z0-9-]*' | sort -u
end
complete -c mlactl -n "not __fish_seen_subcommand_from $cmds" -f -a "$cmds"
complete -c mlactl -l format -x -a "table json csv svg jsonl"
complete -c mlactl -l color -x -a "auto always never"
complete -c mlactl -l compact -d "JSON on one line"
complete -c mlactl -n "not __fish_seen_subcommand_from schema" -s o -l output -r -F -d "write the report to FILE"
complete -c mlactl -n "__fish_seen_subcommand_from schema" -l output -x -a "validate metadata windows route schedule run check defects bench check-jsonl error" -d "the JSON Schema of this verb's output"
complete -c mlactl -s v -l verbose
complete -c mlactl -s q -l quiet
complete -c mlactl -l version
complete -c mlactl -l backend -x -a "auto cpu gpu"
complete -c mlactl -l inject -x -a "(mlactl defects --format csv 2>/dev/null | tail -n +2 | string split -f1 ,)"
complete -c mlactl -n "__fish_seen_subcommand_from $cmds" -a "(__mlactl_sub_options)"
complete -c mlactl -n "__fish_seen_subcommand_from $cmds" -F

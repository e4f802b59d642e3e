/* bridge-submit: submit a batch job the way slurm-bridge does, for tests.
 *
 * slurm-bridge (SchedMD Slinky) submits a Kubernetes pod group as one Slurm
 * job through slurmrestd, with the job's AdminComment set at submission to
 * {"pods":["<namespace>/<pod>",...]} and no SPANK options. sbatch 22.05 cannot
 * set AdminComment, and slurmrestd needs JWT setup the testbed does not have,
 * so this submits the same job description through libslurm's public API.
 * Slurm lets only SlurmUser and root set AdminComment at submission.
 *
 *   bridge-submit -c '{"pods":["ml/train-0"]}' -N 18 -g gpu:4 -x -J name -o FILE SCRIPT
 *
 * Prints the job id; on refusal prints Slurm's error (and job_submit's
 * message, which libslurm logs) to stderr and exits 1.
 */
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>

/* 23.11 dropped slurm_get_errno() (errors are in errno) and 26.05 names the
 * submitted job by a step id. */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
#define last_error() errno
#else
#define last_error() slurm_get_errno()
#endif
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
#define submitted_job_id(r) ((r)->step_id.job_id)
#else
#define submitted_job_id(r) ((r)->job_id)
#endif

static char* read_file(const char* path)
{
    FILE* f = fopen(path, "r");
    if (!f) {
        perror(path);
        exit(2);
    }
    size_t cap = 4096, n = 0;
    char* buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    buf[n] = '\0';
    fclose(f);
    return buf;
}

int main(int argc, char** argv)
{
    job_desc_msg_t d;
    submit_response_msg_t* resp = NULL;
    char cwd[4096];
    char* env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    int opt;

    slurm_init(NULL);
    slurm_init_job_desc_msg(&d);
    d.name = "bridge";
    d.std_out = "/dev/null";
    d.min_nodes = 1;
    while ((opt = getopt(argc, argv, "c:N:g:xJ:o:t:")) != -1) {
        switch (opt) {
        case 'c':
            d.admin_comment = optarg;
            break;
        case 'N':
            d.min_nodes = d.max_nodes = (uint32_t)atoi(optarg);
            break;
        case 'g':
            /* As sbatch --gres=gpu:4 sends it (slurm_opt.c: "gres:" prefix). */
            d.tres_per_node = malloc(strlen(optarg) + 6);
            sprintf(d.tres_per_node, "gres:%s", optarg);
            break;
        case 'x':
            d.shared = JOB_SHARED_NONE;
            break;
        case 'J':
            d.name = optarg;
            break;
        case 'o':
            d.std_out = optarg;
            break;
        case 't':
            d.time_limit = (uint32_t)atoi(optarg);
            break;
        default:
            fprintf(stderr, "usage: %s [-c ADMIN_COMMENT] [-N NODES] [-g GRES] [-x] [-J NAME] [-o OUT] [-t MIN] SCRIPT\n",
                    argv[0]);
            return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "%s: one SCRIPT file expected\n", argv[0]);
        return 2;
    }
    d.script = read_file(argv[optind]);
    d.user_id = getuid();
    d.group_id = getgid();
    d.environment = env;
    d.env_size = 1;
    if (!getcwd(cwd, sizeof cwd))
        strcpy(cwd, "/tmp");
    d.work_dir = cwd;
    if (slurm_submit_batch_job(&d, &resp) != SLURM_SUCCESS) {
        fprintf(stderr, "bridge-submit: job submission failed: %s\n", slurm_strerror(last_error()));
        return 1;
    }
    printf("%u\n", submitted_job_id(resp));
    if (resp->job_submit_user_msg)
        fprintf(stderr, "bridge-submit: %s\n", resp->job_submit_user_msg);
    slurm_free_submit_response_response_msg(resp);
    slurm_fini();
    return 0;
}

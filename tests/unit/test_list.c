/* test_list.c — the intrusive list (base/list.h): order kept, unlinking at
 * the head, the tail and the middle keeps both ends right, pop empties. */
#include "base/list.h"
#include "unit.h"

typedef struct item {
    int v;
    list_node node;
} item;

/* The values from head to tail, checked against the ends' links. */
static void expect(const list_head *l, const int *want, int n) {
    int i = 0;
    const list_node *prev = NULL;
    for (const list_node *p = l->head; p; p = p->next, i++) {
        CHECK(i < n);
        CHECK_EQ(container_of(p, item, node)->v, want[i]);
        CHECK(p->prev == prev);
        prev = p;
    }
    CHECK_EQ(i, n);
    CHECK(l->tail == prev);
    CHECK_EQ(list_empty(l), n == 0);
}

TEST(push_back_and_front_keep_order) {
    item a = {.v = 1}, b = {.v = 2}, c = {.v = 3};
    list_head l = {0};
    expect(&l, NULL, 0);
    list_push_back(&l, &b.node);
    list_push_back(&l, &c.node);
    list_push_front(&l, &a.node);
    expect(&l, (int[]){1, 2, 3}, 3);
}

TEST(remove_head_middle_tail) {
    item it[5];
    list_head l = {0};
    for (int i = 0; i < 5; i++) {
        it[i].v = i;
        list_push_back(&l, &it[i].node);
    }
    list_remove(&l, &it[2].node);
    expect(&l, (int[]){0, 1, 3, 4}, 4);
    CHECK(it[2].node.prev == NULL && it[2].node.next == NULL);
    list_remove(&l, &it[0].node);
    expect(&l, (int[]){1, 3, 4}, 3);
    list_remove(&l, &it[4].node);
    expect(&l, (int[]){1, 3}, 2);
    list_remove(&l, &it[1].node);
    list_remove(&l, &it[3].node);
    expect(&l, NULL, 0);
}

TEST(pop_front_drains_in_order) {
    item it[3] = {{.v = 7}, {.v = 8}, {.v = 9}};
    list_head l = {0};
    for (int i = 0; i < 3; i++)
        list_push_back(&l, &it[i].node);
    for (int i = 0; i < 3; i++) {
        list_node *n = list_pop_front(&l);
        CHECK(n != NULL);
        CHECK_EQ(container_of(n, item, node)->v, 7 + i);
    }
    CHECK(list_pop_front(&l) == NULL);
    expect(&l, NULL, 0);
}
